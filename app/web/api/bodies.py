"""Request bodies read with a cap (never read in full past it), and the 422 that names a body's field."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import JSONResponse


async def read_capped(request: Request, limit: int) -> bytes | None:
    """The request body, or None as soon as it exceeds ``limit`` bytes (a larger declared length: at once)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def body_error(field: str, message: str, kind: str) -> JSONResponse:
    """A 422 naming ``field`` of the body (loc ["body", field]), its message prefixed by the field's name."""
    return JSONResponse(
        status_code=422,
        content={
            "detail": [{"loc": ["body", field], "msg": f"{field}: {message}", "type": "value_error", "kind": kind}]
        },
    )


async def body_text(request: Request, limit: int, name: str = "body") -> str | JSONResponse:
    """The body as UTF-8 text of at most ``limit`` bytes, or the 422 naming ``name`` (what the body holds) that
    says why not."""
    body = await read_capped(request, limit)
    if body is None:
        return body_error(name, f"must be at most {limit:,} bytes", "too_large")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return body_error(name, "must be UTF-8 text", "encoding")
