"""Application factory: wires the routers, error handlers and middleware."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.middleware.cors import CORSMiddleware

from app import __version__
from app.web.api.routes import core, decision, engines, regimes, sampling
from app.web.core.compression import NegotiatedGZipMiddleware
from app.web.core.config import Settings, get_settings
from app.web.core.errors import ParameterError, handle_parameter_error, handle_validation_error
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
    app = FastAPI(title="specdec-lab", version=__version__, description=DESCRIPTION, docs_url=None, redoc_url=None)
    for module in (core, regimes, sampling, decision, engines, pages):
        app.include_router(module.router)
    app.state.settings = settings
    app.openapi_schema = document_query_limits(app.openapi(), settings.max_query_length)
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
    return app


app = create_app()
