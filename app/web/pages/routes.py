"""The pages, their JSON twins, the embeddable demo, static assets and the health probe."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool

from app import __version__
from app.service.inputs import link
from app.service.schemas.core import Health
from app.web.api.bodies import read_capped
from app.web.core.assets import asset_table, asset_url, asset_version
from app.web.core.compression import accepts
from app.web.pages import glossary
from app.web.pages.controls import Control, ControlError
from app.web.pages.page import Page
from app.web.pages.registry import DEMO, LINKED_PAGES, PAGES, page_for_legacy_keys
from app.web.pages.text import fixed
from app.web.pages.views import demo
from app.web.pages.views import embed as embed_view

TEMPLATES = Jinja2Templates(directory=Path(__file__).resolve().parents[3] / "templates")
TEMPLATES.env.globals["asset"] = asset_url
TEMPLATES.env.filters["fixed"] = fixed
TEMPLATES.env.globals["glossary_terms"] = glossary.terms
EMBED = embed_view.PAGE

router = APIRouter()

IMMUTABLE = "public, max-age=31536000, immutable"
# What /embed may show; `parts=` picks a subset, in this order.
EMBED_PARTS = demo.PARTS
# Views served as /api/v1/views/<name>: every page's, and the embed's.
VIEWS: tuple[Page, ...] = (*PAGES, *LINKED_PAGES, EMBED)


def render_page(request: Request, page: Page, embed: bool = False) -> HTMLResponse:
    query = request.query_params
    embed = embed or query.get("embed") in ("1", "true", "yes")
    if embed and page is DEMO:
        page = EMBED  # the demo's parts that `parts=` names, computed alone
    view = page.view(query, strict=False)
    context: dict[str, Any] = {
        "page": page,
        "pages": PAGES,
        "embed": embed,
        "parts": tuple(view.get("parts", EMBED_PARTS)),
        "view": view,
    }
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
            return RedirectResponse(link(target.path, items if renamed is None else renamed), status_code=302)
        return render_page(request, page)

    get_page.__name__ = f"get_{page.name}_page"
    get_page.__doc__ = page.question
    return get_page


for _page in (*PAGES, *LINKED_PAGES):
    router.add_api_route(
        _page.path, _page_handler(_page), methods=["GET"], response_class=HTMLResponse, include_in_schema=False
    )


@router.get("/embed", response_class=HTMLResponse, include_in_schema=False)
def get_embed_page(request: Request) -> HTMLResponse:
    """The demo without page chrome, for iframes; `parts=readouts,curve` (or `run`, ...) for a compact one."""
    return render_page(request, DEMO, embed=True)


def _view_page(name: str) -> Page | None:
    return next((page for page in VIEWS if page.name == name), None)


def _no_view(name: str) -> JSONResponse:
    return JSONResponse({"detail": [{"loc": ["path", "name"], "msg": f"no view named {name!r}"}]}, 404)


def _view_response(page: Page, query: Mapping[str, str], body: Mapping[str, str] | None = None) -> JSONResponse:
    try:
        return JSONResponse(page.view(query, strict=True, body=body))
    except ControlError as error:
        where = "body" if error.control in page.body_controls else "query"
        detail = {
            "loc": [where, error.control.name],
            "msg": error.message,
            "type": "value_error",
            "label": error.control.label,
        }
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
        detail = {"detail": [{"loc": ["body"], "msg": f"the {name} view takes no body: GET it"}]}
        return JSONResponse(detail, 405, headers={"allow": "GET, HEAD"})
    names = {control.name for control in page.body_controls}
    # Each text up to twice its length once JSON escapes quotes and newlines, + framing.
    limit = 2 * sum(control.max_length for control in page.body_controls) + 65_536
    raw = await read_capped(request, limit)
    if raw is None:
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


@dataclass(frozen=True)
class PlainPage:
    """A page without a view or controls (the API docs, the glossary, "not found"): the nav, a heading, a line."""

    name: str
    path: str
    nav: str
    title: str
    question: str


DOCS = PlainPage(
    "docs",
    "/docs",
    "API",
    "The JSON API",
    "Every number of these pages as JSON: GETs with query parameters, and POSTs where a report or step times are "
    "pasted. Try any operation below; each page's own view is here too, under “page views”.",
)
GLOSSARY = PlainPage(
    "glossary",
    "/glossary",
    "Glossary",
    "Glossary",
    "The words these pages use that a newcomer may not know. On every page, a dotted underline explains one on hover "
    "or focus.",
)


def _plain_context(page: PlainPage) -> dict[str, Any]:
    return {"page": page, "pages": PAGES, "embed": False}


@router.api_route(
    "/api/v1/views/{name}", methods=["PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"], include_in_schema=False
)
def refuse_view_method(name: str) -> JSONResponse:
    """405 with the methods the view has: GET (and HEAD), and POST where the page takes pasted texts."""
    page = _view_page(name)
    if page is None:
        return _no_view(name)
    allow = "GET, HEAD, POST" if page.body_controls else "GET, HEAD"
    return JSONResponse({"detail": f"Method Not Allowed: {allow}"}, 405, headers={"allow": allow})


@router.get("/docs", response_class=HTMLResponse, include_in_schema=False)
def get_docs(request: Request) -> HTMLResponse:
    """Interactive API documentation (Swagger UI served from this origin), under the site's nav."""
    return TEMPLATES.TemplateResponse(request, "docs.html", _plain_context(DOCS))


@router.get("/glossary", response_class=HTMLResponse, include_in_schema=False)
def get_glossary(request: Request) -> HTMLResponse:
    """Every term the pages explain on hover and focus, with its explanation."""
    return TEMPLATES.TemplateResponse(request, "glossary.html", {**_plain_context(GLOSSARY), "terms": glossary.TERMS})


def not_found_page(request: Request) -> HTMLResponse:
    """The 404 of an address that is no page: the nav, and the pages there are."""
    page = PlainPage(
        "not-found",
        request.url.path,
        "Not found",
        "No page here",
        f"There is no page at {request.url.path}. These are the pages there are:",
    )
    return TEMPLATES.TemplateResponse(request, "not_found.html", _plain_context(page), status_code=404)


@router.get("/healthz", summary="Is the server up?", response_model=Health, tags=["service"])
async def get_health() -> Health:  # on the event loop: no hand-over to the thread pool
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
    accept_encoding = request.headers.get("accept-encoding", "")
    if asset.brotli is not None and accepts("br", accept_encoding):
        body = asset.brotli
        headers["content-encoding"] = "br"
    elif asset.compressible and accepts("gzip", accept_encoding):
        body = asset.gzipped()
        headers["content-encoding"] = "gzip"
    return Response(content=body, media_type=asset.content_type, headers=headers)


def _matches_etag(if_none_match: str, etag: str) -> bool:
    """RFC 9110 weak comparison against a list of tags, or *."""
    tags = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
    return "*" in tags or etag in tags


# ---------------------------------------------------------------- the views in the OpenAPI document

VIEW_ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "detail": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["loc", "msg"],
                "properties": {
                    "loc": {"type": "array", "items": {"type": "string"}},
                    "msg": {"type": "string"},
                    "type": {"type": "string"},
                    "label": {"type": "string", "description": "The control's label on the page."},
                },
            },
        }
    },
}
VIEW_SCHEMA = {
    "type": "object",
    "description": "The page's view: numbers, display strings, tables and chart figures (Plotly JSON).",
    "required": ["page", "controls", "links", "notes"],
    "properties": {
        "page": {"type": "string"},
        "controls": {"type": "object", "description": "Each control's value and its text as the page shows it."},
        "links": {"type": "object", "description": "The page's address (self), this view (json) and the API calls."},
        "notes": {"type": "array", "items": {"type": "string"}},
    },
}


def _control_schema(control: Control) -> dict[str, Any]:
    schema: dict[str, Any]
    if control.kind == "select":
        schema = {"type": "string", "enum": [value for value, _ in control.options]}
    elif control.kind == "text":
        schema = {"type": "string", "maxLength": control.max_length}
        if control.known is not None:
            schema["enum"] = ["", *control.known()]  # empty: the default
    else:
        schema = {"type": "integer" if control.integer else "number", "minimum": control.low, "maximum": control.high}
    if control.default is not None:
        schema["default"] = control.default
    return schema


def _control_parameter(control: Control) -> dict[str, Any]:
    described = f"{control.label}" + (f": {control.help}" if control.help else "") + f"; {control.bounds}."
    return {
        "name": control.name,
        "in": "query",
        "required": False,
        "description": described,
        "schema": _control_schema(control),
        "allowEmptyValue": True,  # an empty value is the default, as in the page's address
        "x-label": control.label,  # the name a refusal gives it: its label on the page
    }


def _view_operation(page: Page, method: str) -> dict[str, Any]:
    where = "the demo without the page's chrome, the parts `parts` names" if page is EMBED else f"the page {page.path}"
    description = (
        f'{page.question}\n\nThe same object {where} is rendered from (its "This page as JSON" link). The query is '
        "the page's own controls, named as in the page's address and left out at their defaults. A value the page "
        "would correct (out of its bounds, or breaking a rule between its controls) is refused with a 422 that names "
        "the control by its label on the page (`label`) and states its bounds. Keys the page does not know are "
        "ignored, so that old addresses keep working."
    )
    controls = page.controls
    operation: dict[str, Any] = {
        "tags": ["page views"],
        "summary": f"Page {'/embed' if page is EMBED else page.path} as JSON ({page.nav})",
        "operationId": f"{method}_view_{page.name}",
        "description": description,
        "parameters": [_control_parameter(control) for control in controls if control not in page.body_controls],
        "x-accepts-unknown-parameters": True,
        "x-refuses-by-label": True,
        "responses": {
            "200": {"description": "The page's view", "content": {"application/json": {"schema": VIEW_SCHEMA}}},
            "422": {
                "description": "A control's value the page would correct, named by its label",
                "content": {"application/json": {"schema": VIEW_ERROR_SCHEMA}},
            },
        },
    }
    if method == "post":
        operation["summary"] += ", with pasted texts in the body"
        operation["description"] += (
            " The long texts (a pasted report) travel as a JSON object of strings in the body, never in the address."
        )
        operation["requestBody"] = {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            control.name: {
                                "type": "string",
                                "maxLength": control.max_length,
                                "description": control.label,
                            }
                            for control in page.body_controls
                        },
                    }
                }
            },
        }
    return operation


def document_views(openapi: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI document with /api/v1/views/<name> of every page: GET, and POST where a page takes texts."""
    documented = dict(openapi)
    paths = dict(documented.get("paths", {}))
    for page in VIEWS:
        operations = {"get": _view_operation(page, "get")}
        if page.body_controls:
            operations["post"] = _view_operation(page, "post")
        paths[f"/api/v1/views/{page.name}"] = operations
    documented["paths"] = paths
    return documented
