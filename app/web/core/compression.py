"""gzip for HTML and JSON, honouring Accept-Encoding's q-values (q=0 means no); the codings a client takes."""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.middleware.gzip import GZipMiddleware
from starlette.types import Receive, Scope, Send


def accepts(coding: str, accept_encoding: str) -> bool:
    """Whether Accept-Encoding takes `coding` (named, or by "*"), with a q-value above 0 where it gives one."""
    for item in accept_encoding.split(","):
        name, _, parameters = item.strip().partition(";")
        if name.strip().lower() in (coding, "*"):
            quality = parameters.strip().removeprefix("q=")
            try:
                return not parameters or float(quality) > 0
            except ValueError:
                return False
    return False


def accepts_gzip(accept_encoding: str) -> bool:
    return accepts("gzip", accept_encoding)


class NegotiatedGZipMiddleware(GZipMiddleware):
    """Starlette's gzip, skipped when the client refuses gzip with q=0."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not accepts_gzip(Headers(scope=scope).get("accept-encoding", "")):
            await self.app(scope, receive, send)
            return
        await super().__call__(scope, receive, send)
