"""The pages, their JSON twins, the embeddable demo, static assets and the health probe."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool

from app import __version__
from app.web.core.assets import asset_table, asset_url, asset_version
from app.web.core.compression import accepts_gzip
from app.web.pages.controls import ControlError
from app.web.pages.page import Page
from app.web.pages.registry import DEMO, PAGES, page_for_legacy_keys
from app.web.pages.text import fixed
from app.web.schemas.core import Health

TEMPLATES = Jinja2Templates(directory=Path(__file__).resolve().parents[3] / "templates")
TEMPLATES.env.globals["asset"] = asset_url
TEMPLATES.env.filters["fixed"] = fixed

router = APIRouter()

IMMUTABLE = "public, max-age=31536000, immutable"
# What /embed may show; `parts=` picks a subset, in this order.
EMBED_PARTS = ("controls", "readouts", "curve", "run", "histogram")
DEFAULT_EMBED_PARTS = ("controls", "readouts", "curve", "run")


def embed_parts(raw: str | None) -> tuple[str, ...]:
    """The parts an embed shows: the known names in `parts=`, or the default set when none is known."""
    wanted = {part.strip() for part in (raw or "").split(",")}
    chosen = tuple(part for part in EMBED_PARTS if part in wanted)
    return chosen or DEFAULT_EMBED_PARTS


def render_page(request: Request, page: Page, embed: bool = False) -> HTMLResponse:
    query = request.query_params
    embed = embed or query.get("embed") in ("1", "true", "yes")
    context: dict[str, Any] = {
        "page": page,
        "pages": PAGES,
        "embed": embed,
        "parts": embed_parts(query.get("parts")) if embed else EMBED_PARTS,
    }
    context["view"] = page.view(query, strict=False)
    return TEMPLATES.TemplateResponse(request, page.template, context)


def _page_handler(page: Page) -> Any:
    def get_page(request: Request) -> Response:
        items = request.query_params.multi_items()
        target = page
        if page is DEMO:
            target = page_for_legacy_keys(key for key, _ in items) or page
            if target is not page:  # an address of the one-page version: the state of the section it was about
                items = [(key, value) for key, value in items if target.owns(key)]
        renamed = target.renamed(items)  # older keys of the page's controls, under today's names
        if target is not page or renamed is not None:
            query = urlencode(items if renamed is None else renamed)
            return RedirectResponse(f"{target.path}?{query}" if query else target.path, status_code=302)
        return render_page(request, page)

    get_page.__name__ = f"get_{page.name}_page"
    get_page.__doc__ = page.question
    return get_page


for _page in PAGES:
    router.add_api_route(
        _page.path, _page_handler(_page), methods=["GET"], response_class=HTMLResponse, include_in_schema=False
    )


@router.get("/embed", response_class=HTMLResponse, include_in_schema=False)
def get_embed_page(request: Request) -> HTMLResponse:
    """The demo without page chrome, for iframes; `parts=readouts,curve` (or `run`, ...) for a compact one."""
    return render_page(request, DEMO, embed=True)


def _view_page(name: str) -> Page | None:
    return next((page for page in PAGES if page.name == name), None)


def _no_view(name: str) -> JSONResponse:
    return JSONResponse({"detail": [{"loc": ["path", "name"], "msg": f"no view named {name!r}"}]}, 404)


def _view_response(page: Page, query: Mapping[str, str], body: Mapping[str, str] | None = None) -> JSONResponse:
    try:
        return JSONResponse(page.view(query, strict=True, body=body))
    except ControlError as error:
        where = "body" if error.control in page.body_controls else "query"
        detail = {"loc": [where, error.control.name], "msg": error.message, "label": error.control.label}
        return JSONResponse({"detail": [detail]}, status_code=422)


def _body_refused(message: str) -> JSONResponse:
    return JSONResponse({"detail": [{"loc": ["body"], "msg": message}]}, status_code=422)


@router.get("/api/v1/views/{name}", include_in_schema=False)
def get_view(name: str, request: Request) -> JSONResponse:
    """A page's view: the same object its first paint was rendered from; a 422 names a control by its label."""
    page = _view_page(name)
    return _no_view(name) if page is None else _view_response(page, request.query_params)


@router.post("/api/v1/views/{name}", include_in_schema=False)
async def post_view(name: str, request: Request) -> JSONResponse:
    """A page's view with long texts (a pasted scrape) as a JSON object of strings; short controls stay in the query."""
    page = _view_page(name)
    if page is None:
        return _no_view(name)
    if not page.body_controls:
        return JSONResponse({"detail": [{"loc": ["body"], "msg": f"the {name} view takes no body"}]}, 405)
    names = {control.name for control in page.body_controls}
    # Each text up to twice its length once JSON escapes quotes and newlines, + framing.
    limit = 2 * sum(control.max_length for control in page.body_controls) + 65_536
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return _body_refused(f"the body must be at most {limit:,} bytes")
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > limit:
            return _body_refused(f"the body must be at most {limit:,} bytes")
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return _body_refused("the body must be a JSON object of texts, in UTF-8")
    fields = ", ".join(sorted(names))
    if not isinstance(body, dict) or not set(body) <= names or not all(isinstance(v, str) for v in body.values()):
        return _body_refused(f"the body must be a JSON object whose fields are texts among: {fields}")
    # Parsing a long paste takes a while: keep it off the event loop.
    return await run_in_threadpool(_view_response, page, request.query_params, body)


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
