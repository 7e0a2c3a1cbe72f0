"""Fetch a report from a URL: http(s) only, a timeout and a size cap.  The server does so only when allowed."""

from __future__ import annotations

import urllib.error
import urllib.request
from urllib.parse import urlsplit

MAX_FETCH_BYTES = 1_000_000
FETCH_TIMEOUT_S = 5.0


class FetchError(ValueError):
    """A URL that was refused or could not be read, with the reason."""


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Redirects are not followed: a report is read from the URL given, nowhere else."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


def check_url(url: str) -> str:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https"):
        raise FetchError(f"only http and https URLs are fetched; got {parts.scheme or 'no scheme'!r}")
    if not parts.hostname:
        raise FetchError("the URL has no host")
    return url.strip()


def fetch_text(url: str, timeout: float = FETCH_TIMEOUT_S, max_bytes: int = MAX_FETCH_BYTES) -> str:
    """The body at ``url`` as text; FetchError when refused, unreachable, too slow or larger than ``max_bytes``."""
    request = urllib.request.Request(check_url(url), headers={"accept": "text/plain, application/json"})
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            body: bytes = response.read(max_bytes + 1)
    except urllib.error.HTTPError as error:
        moved = " (redirects are not followed)" if 300 <= error.code < 400 else ""
        raise FetchError(f"{url} answered HTTP {error.code}{moved}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise FetchError(f"cannot read {url}: {reason}") from None
    if len(body) > max_bytes:
        raise FetchError(f"{url} sent more than {max_bytes:,} bytes")
    return body.decode("utf-8", errors="replace")
