"""Application factory: wires the routers, error handlers and middleware."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from fastapi import Depends, FastAPI, Request, Response
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import BaseRoute

from app import __version__
from app.model.limits import InputError
from app.web.api.routes import calibrate, core, engines, measure, regimes, rollout, rules, sampling, sources, trees
from app.web.core.compression import NegotiatedGZipMiddleware
from app.web.core.config import Settings, get_settings
from app.web.core.contract import HeadMiddleware, reject_unknown_query_parameters
from app.web.core.errors import ParameterError, handle_parameter_error, handle_validation_error
from app.web.core.heavy import BusyMiddleware, HeavyWorkLimiter, document_heavy_work, heavy_slot, heavy_work_lifespan
from app.web.core.security import SecurityHeadersMiddleware, document_query_limits
from app.web.pages import routes as pages

DESCRIPTION = """
The arithmetic of speculative decoding: a small draft model guesses k tokens,
the target model verifies them in one pass, and everything up to the first
wrong guess is kept. The questions are GETs with query parameters; what takes
a pasted report or measured step times in its body is a POST (each says so
below). Bad input gets a 422 naming the parameter and its bounds. Under
"page views", every page of the site as the JSON it is rendered from.

[Back to the site](/) · [Glossary](/glossary)
"""


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    app = FastAPI(
        title="specdec-lab",
        version=__version__,
        description=DESCRIPTION,
        docs_url=None,
        redoc_url=None,
        dependencies=[Depends(reject_unknown_query_parameters)],
        # The heavy-work processes start with the worker and are shut down, waited for, when it stops.
        lifespan=heavy_work_lifespan,
    )
    for module in (core, regimes, sampling, calibrate, sources, trees, engines, rules, rollout, measure, pages):
        app.include_router(module.router)
    app.state.settings = settings
    app.state.heavy_work = HeavyWorkLimiter(settings.heavy_concurrency)
    heavy = heavy_operations(app)
    documented = pages.document_views(human_summaries(app, app.openapi()))
    app.openapi_schema = document_heavy_work(document_query_limits(documented, settings.max_query_length), heavy)
    app.add_exception_handler(RequestValidationError, handle_validation_error)
    app.add_exception_handler(StarletteHTTPException, handle_http_error)
    app.add_exception_handler(ParameterError, handle_parameter_error)
    app.add_exception_handler(InputError, handle_parameter_error)  # the application layer names the input
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST"],
            allow_headers=["content-type"],
        )
    # HTML and JSON; static assets arrive already compressed and are passed through.
    app.add_middleware(NegotiatedGZipMiddleware, minimum_size=1024)
    app.add_middleware(SecurityHeadersMiddleware, settings=settings)
    app.add_middleware(HeadMiddleware)
    # Outermost: a flood of heavy requests is refused before any other work.
    app.add_middleware(
        BusyMiddleware, limiter=app.state.heavy_work, heavy=heavy | {("HEAD", path) for _, path in heavy}
    )
    return app


def api_routes(routes: Iterable[BaseRoute]) -> Iterator[APIRoute]:
    """Every APIRoute of the app, also those inside included routers."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from api_routes(included.routes)


async def handle_http_error(request: Request, error: Exception) -> Response:
    """An address that is no page gets a page with the nav (404); the API keeps answering JSON."""
    assert isinstance(error, StarletteHTTPException)
    if error.status_code == 404 and not request.url.path.startswith("/api/"):
        return pages.not_found_page(request)
    return await http_exception_handler(request, error)


def human_summaries(app: FastAPI, openapi: dict[str, Any]) -> dict[str, Any]:
    """Every operation's summary in words: one an operation was not given is its docstring's first sentence,
    never its function's name ("Get Expected Tokens")."""
    paths = openapi.get("paths", {})
    for route in api_routes(app.routes):
        if route.summary or not route.include_in_schema or not route.description:
            continue
        first = route.description.strip().split("\n\n")[0].replace("\n", " ")
        sentence = first.split(". ")[0].rstrip(".")
        if len(sentence) > 120:
            sentence = sentence.split("; ")[0]
        for method in route.methods or ():
            operation = paths.get(route.path, {}).get(method.lower())
            if operation is not None:
                operation["summary"] = sentence
    return openapi


def heavy_operations(app: FastAPI) -> set[tuple[str, str]]:
    """(METHOD, path) of every operation that holds a heavy-work slot."""
    found: set[tuple[str, str]] = set()
    for route in api_routes(app.routes):
        if any(sub.call is heavy_slot for sub in route.dependant.dependencies):
            found.update((method, route.path) for method in route.methods or ())
    return found


app = create_app()
