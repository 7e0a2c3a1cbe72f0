"""Response headers that keep the page from being turned against its visitors."""

from __future__ import annotations

import copy
import json
from collections import Counter
from typing import Any
from urllib.parse import parse_qsl

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.web.core.config import Settings


def content_security_policy(frame_ancestors: list[str]) -> str:
    ancestors = " ".join(frame_ancestors) if frame_ancestors else "'none'"
    return "; ".join(
        [
            "default-src 'self'",
            "script-src 'self'",
            # Plotly sets style attributes and injects a style sheet at run time.
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data: blob:",
            "font-src 'self' data:",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            f"frame-ancestors {ancestors}",
        ]
    )


class SecurityHeadersMiddleware:
    """Adds CSP and friends to every response; rejects overlong (414) and repeated (422) query parameters."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.max_query_length = settings.max_query_length
        self.headers = {
            "content-security-policy": content_security_policy(settings.frame_ancestors),
            "x-content-type-options": "nosniff",
            "referrer-policy": "strict-origin-when-cross-origin",
            "cross-origin-opener-policy": "same-origin",
            "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
        }
        if not settings.frame_ancestors:
            # Browsers that predate CSP frame-ancestors still honour this; it cannot list origins, so only for "none".
            self.headers["x-frame-options"] = "DENY"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in self.headers.items():
                    headers.setdefault(name, value)
            await send(message)

        if len(scope.get("query_string", b"")) > self.max_query_length:
            await _plain_error(
                send_with_headers, 414, "query", f"query string longer than {self.max_query_length} characters"
            )
            return
        if scope["path"].startswith("/api/"):
            repeated = _repeated_parameter(scope.get("query_string", b""))
            if repeated is not None:
                await _plain_error(
                    send_with_headers, 422, repeated, f"{repeated} is given more than once; give each parameter once"
                )
                return
        await self.app(scope, receive, send_with_headers)


def _repeated_parameter(query_string: bytes) -> str | None:
    names = Counter(name for name, _ in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True))
    return next((name for name, count in names.items() if count > 1), None)


async def _plain_error(send: Send, status: int, name: str, message: str) -> None:
    location = ["query"] if name == "query" else ["query", name]
    body = json.dumps({"detail": [{"loc": location, "msg": message, "type": "value_error"}]}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def document_query_limits(openapi: dict[str, Any], max_query_length: int) -> dict[str, Any]:
    """The OpenAPI schema with the answers this middleware gives before any route runs.

    Every operation may get a 414 (query string over ``max_query_length``), and every operation under
    /api/ a 422 for a repeated parameter, both in the shape of FastAPI's validation errors.  Wire it with
    ``app.openapi_schema = document_query_limits(app.openapi(), settings.max_query_length)``.
    """
    documented = copy.deepcopy(openapi)
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/HTTPValidationError"}}}
    for path, operations in documented.get("paths", {}).items():
        for operation in operations.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            responses = operation["responses"]
            responses.setdefault(
                "414",
                {"description": f"Query string longer than {max_query_length} characters", "content": error},
            )
            if path.startswith("/api/"):
                responses.setdefault("422", {"description": "Invalid, missing or repeated parameter", "content": error})
    # FastAPI defines these only when some route validates parameters; a parameterless app still needs them.
    schemas = documented.setdefault("components", {}).setdefault("schemas", {})
    schemas.setdefault(
        "HTTPValidationError",
        {
            "type": "object",
            "properties": {"detail": {"type": "array", "items": {"$ref": "#/components/schemas/ValidationError"}}},
        },
    )
    schemas.setdefault(
        "ValidationError",
        {
            "type": "object",
            "required": ["loc", "msg", "type"],
            "properties": {
                "loc": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
                "msg": {"type": "string"},
                "type": {"type": "string"},
            },
        },
    )
    return documented
