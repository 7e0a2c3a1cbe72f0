"""Static assets: content-hashed URLs, brotli or gzip when accepted, 304 on a matching ETag, Plotly from its package."""

from __future__ import annotations

import gzip
import hashlib
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import plotly
import pytest
from fastapi.testclient import TestClient

from app.web.core import assets
from app.web.core.assets import PLOTLY_BUNDLE, PLOTLY_PATH, asset_table, asset_url, asset_version

IMMUTABLE = "public, max-age=31536000, immutable"


@pytest.fixture
def scratch_static(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of static/ that a test may change; the asset caches are rebuilt around it."""
    root = tmp_path / "static"
    shutil.copytree(assets.STATIC_ROOT, root)
    monkeypatch.setattr(assets, "STATIC_ROOT", root)
    asset_table.cache_clear()
    asset_version.cache_clear()
    yield root
    asset_table.cache_clear()
    asset_version.cache_clear()


def rebuilt_version() -> str:
    asset_table.cache_clear()
    asset_version.cache_clear()
    return asset_version()


def test_version_changes_with_content_and_only_with_content(scratch_static: Path) -> None:
    before = asset_version()
    assert rebuilt_version() == before, "the version must be a pure function of the bytes"
    script = scratch_static / "js" / "embed.js"
    original = script.read_bytes()
    script.write_bytes(original + b"\n// changed\n")
    changed = rebuilt_version()
    assert changed != before
    assert asset_url("js/embed.js") == f"/static/{changed}/js/embed.js"
    script.write_bytes(original)
    assert rebuilt_version() == before
    (scratch_static / "js" / "new-module.js").write_text("export const x = 1;\n")
    assert rebuilt_version() != before


def test_page_references_assets_by_current_hash(client: TestClient) -> None:
    body = client.get("/").text
    version = asset_version()
    referenced = re.findall(r'(?:src|href)="(/static/[^"]+)"', body)
    assert f"/static/{version}/{PLOTLY_PATH}" in referenced
    assert f"/static/{version}/css/site.css" in referenced
    for url in referenced:
        assert url.startswith(f"/static/{version}/"), url
        response = client.get(url)
        assert response.status_code == 200, url
        assert response.headers["cache-control"] == IMMUTABLE


def test_plotly_is_served_from_the_installed_partial_bundle(client: TestClient) -> None:
    installed = PLOTLY_BUNDLE.read_bytes()
    response = client.get(asset_url(PLOTLY_PATH), headers={"accept-encoding": "identity"})
    assert response.status_code == 200
    assert response.content == installed
    assert response.headers["content-type"].startswith("text/javascript")
    assert "content-encoding" not in response.headers
    assert len(installed) > 1_000_000, "the real bundle, not a stub"
    full = (Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js").read_bytes()
    assert len(installed) < len(full) / 3, "a partial bundle, not the full one"
    # the same Plotly.js as the plotly package the figures are written for
    version = re.compile(rb"plotly\.js (?:\([^)]*\) )?v(\d+\.\d+\.\d+)")
    ours, theirs = version.search(installed[:400]), version.search(full[:400])
    assert ours is not None and theirs is not None and ours.group(1) == theirs.group(1)


def _trace_types(value: object) -> set[str]:
    """The trace types of every figure in a view (a trace with no type is a scatter)."""
    found: set[str] = set()
    if isinstance(value, dict):
        if isinstance(value.get("data"), list) and isinstance(value.get("layout"), dict):
            found |= {str(trace.get("type", "scatter")) for trace in value["data"]}
        for item in value.values():
            found |= _trace_types(item)
    elif isinstance(value, list):
        for item in value:
            found |= _trace_types(item)
    return found


def test_the_bundle_draws_every_trace_type_the_pages_use(client: TestClient) -> None:
    bundle = PLOTLY_BUNDLE.read_text(encoding="utf-8")
    registered = set(re.findall(r'name:"([a-z0-9]+)",basePlotModule', bundle))
    used: set[str] = set()
    for page in ("demo", "batch", "exact", "decide"):
        used |= _trace_types(client.get(f"/api/v1/views/{page}").json())
    assert used and "scatter" in used and "bar" in used
    assert used <= registered, f"trace types missing from the bundle: {sorted(used - registered)}"


@pytest.mark.parametrize("path", [PLOTLY_PATH, "js/demo.js", "css/site.css"])
def test_gzip_served_when_accepted_and_identity_otherwise(client: TestClient, path: str) -> None:
    url = asset_url(path)
    plain = client.get(url, headers={"accept-encoding": "identity"})
    assert "content-encoding" not in plain.headers
    with client.stream("GET", url, headers={"accept-encoding": "gzip"}) as compressed:
        assert compressed.headers["content-encoding"] == "gzip"
        assert "accept-encoding" in compressed.headers["vary"].lower()
        raw = b"".join(compressed.iter_raw())
    assert int(compressed.headers["content-length"]) == len(raw)
    assert gzip.decompress(raw) == plain.content
    assert len(raw) < 0.5 * len(plain.content), "text assets should at least halve under gzip"


def test_already_compressed_formats_are_not_gzipped(client: TestClient, scratch_static: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
    (scratch_static / "picture.png").write_bytes(png)
    response = client.get(asset_url("picture.png"), headers={"accept-encoding": "gzip"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/png"
    assert "content-encoding" not in response.headers
    assert response.content == png


def test_matching_etag_gives_304_without_a_body(client: TestClient) -> None:
    url = asset_url("js/demo.js")
    first = client.get(url)
    etag = first.headers["etag"]
    assert re.fullmatch(r'"[0-9a-f]{20}"', etag)
    again = client.get(url, headers={"if-none-match": etag})
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == etag
    stale = client.get(url, headers={"if-none-match": '"0000000000"'})
    assert stale.status_code == 200
    assert stale.content == first.content


def test_an_old_version_is_served_but_not_cached_for_good(client: TestClient) -> None:
    response = client.get(f"/static/000000000000/{PLOTLY_PATH}")
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-cache"


@pytest.mark.parametrize(
    "path",
    [
        "js/no-such.js",
        "../app/settings.py",
        "..%2Fapp%2Fsettings.py",
        "%2e%2e/%2e%2e/pyproject.toml",
        "/etc/passwd",
    ],
)
def test_unknown_and_traversing_paths_are_404(client: TestClient, path: str) -> None:
    response = client.get(f"/static/{asset_version()}/{path}")
    assert response.status_code == 404
    assert b"Settings" not in response.content
    assert b"root:" not in response.content


@pytest.mark.parametrize(
    "header",
    ["{etag}", "W/{etag}", '"other", {etag}', "*"],
)
def test_if_none_match_lists_weak_tags_and_star(client: TestClient, header: str) -> None:
    url = asset_url("js/demo.js")
    etag = client.get(url).headers["etag"]
    response = client.get(url, headers={"if-none-match": header.format(etag=etag)})
    assert response.status_code == 304


def test_gzip_refused_with_q_zero(client: TestClient) -> None:
    response = client.get(asset_url("js/demo.js"), headers={"accept-encoding": "gzip;q=0, identity"})
    assert "content-encoding" not in response.headers
    assert response.content == asset_table()["js/demo.js"].body


def test_page_and_json_are_compressed(client: TestClient) -> None:
    page = client.get("/", headers={"accept-encoding": "gzip"})
    assert page.headers["content-encoding"] == "gzip"
    assert "<main" in page.text
    curve = client.get("/api/v1/curve", headers={"accept-encoding": "gzip"})
    assert curve.headers["content-encoding"] == "gzip"
    assert curve.json()["best_k"] == 4


def brotli_decoded(body: bytes) -> bytes:
    """`body` decoded by Node's brotli (the encoder that made it is Node's too, but the decoder is the format's)."""
    node = shutil.which("node")
    assert node, "node installs Plotly's bundle and its brotli; it is needed here"
    script = "process.stdout.write(require('zlib').brotliDecompressSync(require('fs').readFileSync(0)))"
    return subprocess.run([node, "-e", script], input=body, capture_output=True, check=True, timeout=60).stdout


def test_plotly_is_served_as_the_brotli_made_at_install_when_accepted(client: TestClient) -> None:
    url = asset_url(PLOTLY_PATH)
    with client.stream("GET", url, headers={"accept-encoding": "gzip, deflate, br, zstd"}) as answer:
        assert answer.headers["content-encoding"] == "br"
        assert "accept-encoding" in answer.headers["vary"].lower()
        assert answer.headers["cache-control"] == IMMUTABLE
        raw = b"".join(answer.iter_raw())
    assert int(answer.headers["content-length"]) == len(raw)
    assert brotli_decoded(raw) == PLOTLY_BUNDLE.read_bytes()
    gzipped = asset_table()[PLOTLY_PATH].gzipped()
    assert len(raw) < 0.9 * len(gzipped), "brotli is worth serving only when it is clearly smaller than gzip"


@pytest.mark.parametrize("accept", ["br;q=0, gzip", "gzip", "gzip, br;q=0.0"])
def test_brotli_refused_falls_back_to_gzip(client: TestClient, accept: str) -> None:
    answer = client.get(asset_url(PLOTLY_PATH), headers={"accept-encoding": accept})
    assert answer.headers["content-encoding"] == "gzip"
    assert answer.content == PLOTLY_BUNDLE.read_bytes()


def test_an_asset_with_no_brotli_made_is_gzipped(client: TestClient) -> None:
    answer = client.get(asset_url("js/demo.js"), headers={"accept-encoding": "br, gzip"})
    assert answer.headers["content-encoding"] == "gzip"
    assert answer.content == asset_table()["js/demo.js"].body


def test_a_brotli_made_from_other_content_is_not_served(client: TestClient, scratch_static: Path) -> None:
    script = scratch_static / "js" / "embed.js"
    body = script.read_bytes()
    stale = hashlib.sha256(b"another version of the file").hexdigest()[:20]
    (script.parent / f"embed.js.{stale}.br").write_bytes(b"not this file's brotli")
    asset_table.cache_clear()
    asset_version.cache_clear()
    answer = client.get(asset_url("js/embed.js"), headers={"accept-encoding": "br, gzip"})
    assert answer.headers["content-encoding"] == "gzip"
    assert answer.content == body
    assert asset_table()["js/embed.js"].brotli is None
