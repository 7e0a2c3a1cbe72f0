"""Static assets under a content-hashed URL, compressed once and cached for good.

Every file under ``static/``, Plotly.js's partial bundle from npm and Swagger UI from its
installed Python package is served at ``/static/<version>/<path>``, where ``version`` is a hash
of all their contents.  Relative imports between ES modules stay inside the
same versioned folder, so one hash covers the whole tree and a changed file
changes every URL.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import mimetypes
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path

STATIC_ROOT = Path(__file__).resolve().parents[3] / "static"
PLOTLY_PATH = "vendor/plotly.min.js"
# Plotly.js with only the trace types the pages draw (scatter and bar), built when it is installed
# (scripts/plotly_bundle.mjs writes it here; package.json pins plotly.js), about a quarter of the full bundle the
# plotly package ships. It starts over several tasks and then resolves window.PlotlyReady.
PLOTLY_BUNDLE = STATIC_ROOT.parent / "node_modules" / ".plotly-partial" / "plotly.min.js"
COMPRESSIBLE = {"application/javascript", "text/css", "text/javascript", "image/svg+xml", "text/plain"}


@dataclass(frozen=True)
class Asset:
    body: bytes
    content_type: str
    etag: str
    _gzipped: list[bytes]
    _lock: threading.Lock
    # Brotli made when the file was installed (scripts/precompress.mjs), named after its content hash; None if none.
    brotli: bytes | None = None

    @property
    def compressible(self) -> bool:
        return self.content_type.split(";")[0] in COMPRESSIBLE

    def gzipped(self) -> bytes:
        """The gzip body, compressed on first use and kept."""
        with self._lock:
            if not self._gzipped:
                self._gzipped.append(gzip.compress(self.body, compresslevel=9, mtime=0))
            return self._gzipped[0]


def _vendor_files() -> dict[str, Path]:
    """Third-party bundles, served from their installed Python packages."""
    spec = importlib.util.find_spec("fastapi_offline")
    if spec is None or spec.origin is None:
        raise RuntimeError("fastapi-offline is required: it ships the Swagger UI bundle")
    swagger = Path(spec.origin).parent / "static"
    if not PLOTLY_BUNDLE.is_file():
        raise RuntimeError(
            f"Plotly's partial bundle is missing ({PLOTLY_BUNDLE.relative_to(STATIC_ROOT.parent)}): "
            "`make run` builds it (npm ci)"
        )
    return {
        PLOTLY_PATH: PLOTLY_BUNDLE,
        "vendor/swagger-ui-bundle.js": swagger / "swagger-ui-bundle.js",
        "vendor/swagger-ui.css": swagger / "swagger-ui.css",
    }


def _content_type(path: str) -> str:
    if path.endswith(".js"):
        return "text/javascript; charset=utf-8"
    guessed = mimetypes.guess_type(path)[0] or "application/octet-stream"
    return guessed + ("; charset=utf-8" if guessed.startswith("text/") else "")


@cache
def asset_table() -> dict[str, Asset]:
    """All assets by relative path, read once."""
    files = {str(path.relative_to(STATIC_ROOT)): path for path in STATIC_ROOT.rglob("*") if path.is_file()}
    files.update(_vendor_files())
    table = {}
    for relative, path in sorted(files.items()):
        body = path.read_bytes()
        tag = hashlib.sha256(body).hexdigest()[:20]
        table[relative] = Asset(
            body=body,
            content_type=_content_type(relative),
            etag=f'"{tag}"',
            _gzipped=[],
            _lock=threading.Lock(),
            brotli=_precompressed(path, tag),
        )
    return table


def _precompressed(path: Path, tag: str) -> bytes | None:
    """The brotli body made beside `path` when it was installed, if it was made from this content (its name
    carries the content hash: a file left from another version of the bundle is not used)."""
    made = path.with_name(f"{path.name}.{tag}.br")
    return made.read_bytes() if made.is_file() else None


@cache
def asset_version() -> str:
    digest = hashlib.sha256()
    for relative, asset in asset_table().items():
        digest.update(relative.encode())
        digest.update(asset.etag.encode())
    return digest.hexdigest()[:12]


def asset_url(path: str) -> str:
    if path not in asset_table():
        raise KeyError(f"no static asset {path!r}")
    return f"/static/{asset_version()}/{path}"
