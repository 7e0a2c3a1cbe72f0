"""Application factory: wires the routers, error handlers and middleware."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from fastapi import Depends, FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import BaseRoute

from app import __version__
from app.web.api.routes import core, decision, engines, regimes, rules, sampling
from app.web.core.compression import NegotiatedGZipMiddleware
from app.web.core.config import Settings, get_settings
from app.web.core.contract import HeadMiddleware, reject_unknown_query_parameters
from app.web.core.errors import ParameterError, handle_parameter_error, handle_validation_error
from app.web.core.heavy import BusyMiddleware, HeavyWorkLimiter, document_heavy_work, heavy_slot
from app.web.core.security import SecurityHeadersMiddleware, document_query_limits
from app.web.pages import routes as pages

DESCRIPTION = """
The arithmetic of speculative decoding: a small draft model guesses k tokens,
the target model verifies them in one pass, and everything up to the first
wrong guess is kept. Every endpoint is a GET with query parameters; bad input
gets a 422 naming the parameter and its bounds.
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
    )
    for module in (core, regimes, sampling, decision, engines, rules, pages):
        app.include_router(module.router)
    app.state.settings = settings
    app.state.heavy_work = HeavyWorkLimiter(settings.heavy_concurrency)
    heavy = heavy_operations(app)
    app.openapi_schema = document_heavy_work(document_query_limits(app.openapi(), settings.max_query_length), heavy)
    app.add_exception_handler(RequestValidationError, handle_validation_error)
    app.add_exception_handler(ParameterError, handle_parameter_error)
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


def heavy_operations(app: FastAPI) -> set[tuple[str, str]]:
    """(METHOD, path) of every operation that holds a heavy-work slot."""
    found: set[tuple[str, str]] = set()
    for route in api_routes(app.routes):
        if any(sub.call is heavy_slot for sub in route.dependant.dependencies):
            found.update((method, route.path) for method in route.methods or ())
    return found


app = create_app()
