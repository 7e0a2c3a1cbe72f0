"""The API's contract at the edge: unknown query parameters are refused, and HEAD is answered wherever GET is."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from fastapi import HTTPException, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.web.core.errors import query_fields

API_PREFIX = "/api/v1/"


def nearest_name(name: str, known: Iterable[str]) -> str | None:
    """The known parameter a mistyped one most likely meant: same letters in another case, else the closest."""
    names = sorted(known)
    folded = [candidate for candidate in names if candidate.lower() == name.lower()]
    if folded:
        return folded[0]
    by_lower = {candidate.lower(): candidate for candidate in names}
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.5)
    return by_lower[close[0]] if close else None


def unknown_parameter_message(name: str, known: Iterable[str]) -> str:
    """ "`P`: unknown parameter; did you mean `p`?" (or the list of known parameters when nothing is close)."""
    names = sorted(known)
    guess = nearest_name(name, names)
    if guess is not None:
        return f"`{name}`: unknown parameter; did you mean `{guess}`?"
    if names:
        return f"`{name}`: unknown parameter; known parameters: {', '.join(names)}"
    return f"`{name}`: unknown parameter; this operation takes no query parameters"


def _known_names(request: Request) -> frozenset[str] | None:
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    # Operations of the schema only: the pages' JSON twins (/api/v1/views/...) read the page's URL state.
    if dependant is None or not getattr(route, "include_in_schema", True):
        return None
    return frozenset(field.alias for field in query_fields(dependant))


async def reject_unknown_query_parameters(request: Request) -> None:
    """422 for a query parameter that the /api/v1 operation does not declare, naming the nearest known name.

    An app-wide dependency, solved before the operation's own parameters.  Pages (``/``, ``/embed`` and their
    JSON twins, which are not operations of the schema) keep accepting any key, so that old URLs keep working.
    """
    if not request.url.path.startswith(API_PREFIX) or not request.query_params:
        return
    known = _known_names(request)
    if known is None:
        return
    unknown = [name for name in dict.fromkeys(request.query_params.keys()) if name not in known]
    if unknown:
        detail: list[dict[str, Any]] = [
            {"loc": ["query", name], "msg": unknown_parameter_message(name, known), "type": "unknown_parameter"}
            for name in unknown
        ]
        raise HTTPException(status_code=422, detail=detail)


class HeadMiddleware:
    """HEAD is GET without the body: the same status and headers (content-length included), wherever GET is."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def send_without_body(message: Message) -> None:
            if message["type"] == "http.response.body":
                if not message.get("more_body", False):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            await send(message)

        await self.app(dict(scope, method="GET"), receive, send_without_body)
