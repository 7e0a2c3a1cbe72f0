"""The page, its embeddable variant, static assets and the health probe."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from app import __version__
from app.web.api.routes import decision, regimes, sampling
from app.web.api.routes.core import build_curve
from app.web.core.assets import asset_table, asset_url, asset_version
from app.web.core.compression import accepts_gzip
from app.web.pages.page_format import js_fixed
from app.web.pages.page_state import DEMO_CONTROLS, parse_state
from app.web.schemas.core import Health

TEMPLATES = Jinja2Templates(directory=Path(__file__).resolve().parents[3] / "templates")
TEMPLATES.env.globals["asset"] = asset_url
TEMPLATES.env.filters["fixed"] = js_fixed

router = APIRouter()

IMMUTABLE = "public, max-age=31536000, immutable"


SectionContext = Callable[[Mapping[str, str]], dict[str, Any]]

# First-paint data of the sections below the demo, each built by its family's router from the URL state
# (never raising on a malformed URL: bad values fall back to defaults).
SECTION_CONTEXTS: dict[str, SectionContext] = {
    "regimes": regimes.page_context,
    "exact": sampling.page_context,
    "decision": decision.page_context,
}


def render_page(request: Request, embed: bool) -> HTMLResponse:
    state = parse_state(request.query_params)
    state["embed"] = state["embed"] or embed
    curve = build_curve(float(state["p"]), int(state["k"]), float(state["c"]), k_max=12, band=0.10)
    sections = {} if state["embed"] else {name: build(request.query_params) for name, build in SECTION_CONTEXTS.items()}
    return TEMPLATES.TemplateResponse(
        request,
        "index.html",
        {
            "state": state,
            "controls": DEMO_CONTROLS,
            "curve": curve,
            "curve_json": curve.model_dump(),
            "sections": sections,
        },
    )


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def get_page(request: Request) -> HTMLResponse:
    """The interactive demo; state from ?k=&p=&c=, chrome dropped with ?embed=1."""
    return render_page(request, embed=False)


@router.get("/embed", response_class=HTMLResponse, include_in_schema=False)
def get_embed_page(request: Request) -> HTMLResponse:
    """The demo without page chrome, for iframes."""
    return render_page(request, embed=True)


@router.get("/docs", response_class=HTMLResponse, include_in_schema=False)
def get_docs(request: Request) -> HTMLResponse:
    """Interactive API documentation (Swagger UI served from this origin)."""
    return TEMPLATES.TemplateResponse(request, "docs.html", {})


@router.get("/healthz", response_model=Health, tags=["service"])
def get_health() -> Health:
    """Liveness probe."""
    return Health(status="ok", version=__version__)


@router.get("/static/{version}/{path:path}", include_in_schema=False)
def get_asset(version: str, path: str, request: Request) -> Response:
    """A static asset; immutable when the URL carries the current content hash."""
    asset = asset_table().get(path)
    if asset is None:
        return Response(status_code=404, content="not found", media_type="text/plain")
    headers = {
        "etag": asset.etag,
        "cache-control": IMMUTABLE if version == asset_version() else "no-cache",
        "vary": "accept-encoding",
    }
    if _matches_etag(request.headers.get("if-none-match", ""), asset.etag):
        return Response(status_code=304, headers=headers)
    body = asset.body
    if asset.compressible and accepts_gzip(request.headers.get("accept-encoding", "")):
        body = asset.gzipped()
        headers["content-encoding"] = "gzip"
    return Response(content=body, media_type=asset.content_type, headers=headers)


def _matches_etag(if_none_match: str, etag: str) -> bool:
    """RFC 9110 weak comparison against a list of tags, or *."""
    tags = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
    return "*" in tags or etag in tags
