"""A bound on the heavy work one worker runs at once: the excess is answered at once with 503 and Retry-After.

Two parts.  :func:`heavy_slot` counts heavy requests in flight and refuses the excess at once, on the event
loop, before any work starts: queueing it would only move the wait.  :func:`in_worker_process` runs a heavy
handler in a small pool of processes (as many as the bound), because numpy holds the interpreter lock through
each long array operation: in a thread beside the event loop, one simulation of 2,000,000 cycles delays every
cheap request of the worker by hundreds of milliseconds.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import importlib
import inspect
import json
import multiprocessing
import os
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from fastapi import Depends, HTTPException, Request
from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

RETRY_AFTER_SECONDS = 1


class HeavyWorkLimiter:
    """Counts heavy requests in flight; touched only from the event loop, so no lock is needed."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("the limit must be at least 1")
        self.limit = limit
        self.running = 0

    def try_acquire(self) -> bool:
        if self.running >= self.limit:
            return False
        self.running += 1
        return True

    def release(self) -> None:
        self.running -= 1


async def heavy_slot(request: Request) -> AsyncIterator[None]:
    """Holds one of the worker's heavy-work slots for the request, or answers 503 with Retry-After."""
    limiter: HeavyWorkLimiter | None = getattr(request.app.state, "heavy_work", None)
    if limiter is None:
        yield
        return
    if not limiter.try_acquire():
        raise _busy(limiter.limit)
    try:
        yield
    finally:
        limiter.release()


HEAVY = [Depends(heavy_slot)]

Handler = TypeVar("Handler", bound=Callable[..., Any])
_POOLS: list[ProcessPoolExecutor] = []


def _busy(limit: int) -> HTTPException:
    return HTTPException(
        status_code=503,
        detail=f"busy: this worker already runs {limit} heavy requests; retry in {RETRY_AFTER_SECONDS} s",
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


def worker_pool(app: Starlette) -> ProcessPoolExecutor:
    """The app's pool of heavy-work processes, started on first use: at most the bound, at most the cores."""
    pool: ProcessPoolExecutor | None = getattr(app.state, "heavy_pool", None)
    if pool is None:
        limiter: HeavyWorkLimiter | None = getattr(app.state, "heavy_work", None)
        # spawn, not fork: the worker runs threads (the thread pool, the event loop), which fork does not copy.
        context = multiprocessing.get_context("spawn")
        # As many processes as the bound allows and the cores carry: heavy requests beyond the cores (but within
        # the bound) wait their turn in the pool; those beyond the bound were refused already.
        pool = ProcessPoolExecutor(
            max_workers=max(1, min(limiter.limit if limiter else 1, os.cpu_count() or 1)),
            mp_context=context,
            initializer=_exit_with_parent,
            initargs=(os.getpid(),),
        )
        app.state.heavy_pool = pool
        _POOLS.append(pool)
    return pool


@atexit.register
def _shut_pools() -> None:
    for pool in _POOLS:
        pool.shutdown(wait=False, cancel_futures=True)


HEAVY_NICENESS = 10


def _exit_with_parent(parent: int, interval: float = 0.5) -> None:
    """In a pool process: yield the CPU to the worker's event loop, and end once the worker is gone.

    The lower priority (nice 10) lets the event loop answer cheap requests at once while heavy work runs on
    the same cores; the watch ends the process when its worker was killed or stopped without cleanup.
    """
    with contextlib.suppress(OSError):
        os.nice(HEAVY_NICENESS)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _run_original(module: str, name: str, arguments: dict[str, Any]) -> Any:
    """In a pool process: the undecorated handler module.name called with the request's arguments."""
    handler = inspect.unwrap(getattr(importlib.import_module(module), name))
    return handler(**arguments)


def in_worker_process(handler: Handler) -> Handler:
    """Run a sync handler in the app's heavy-work processes; its arguments and answer travel by pickle.

    The wrapper keeps the handler's signature (so FastAPI reads the same parameters) and adds the request,
    which it needs to find the app's pool.  Exceptions (a ParameterError naming a parameter) come back as they are.
    """
    signature = inspect.signature(handler, eval_str=True)
    request_parameter = inspect.Parameter("heavy_request", inspect.Parameter.KEYWORD_ONLY, annotation=Request)

    @functools.wraps(handler)
    async def run(heavy_request: Request, **arguments: Any) -> Any:
        app = heavy_request.app
        call = functools.partial(_run_original, handler.__module__, handler.__name__, arguments)
        try:
            return await asyncio.get_running_loop().run_in_executor(worker_pool(app), call)
        except BrokenProcessPool:
            app.state.heavy_pool = None  # a process died (killed, out of memory): start afresh next time
            limiter: HeavyWorkLimiter | None = getattr(app.state, "heavy_work", None)
            raise _busy(limiter.limit if limiter else 1) from None

    run.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*signature.parameters.values(), request_parameter]
    )
    return run  # type: ignore[return-value]


BUSY_RESPONSE: dict[str, Any] = {
    "description": "Busy: the worker's bound on heavy work at once is reached; retry after Retry-After seconds.",
    "headers": {"Retry-After": {"description": "Seconds to wait before retrying.", "schema": {"type": "integer"}}},
}


class BusyMiddleware:
    """Answers a heavy request 503 before routing when the worker's heavy-work slots are all taken.

    The slot itself is taken by :func:`heavy_slot`; this only makes the refusal of a flood cheap (no routing,
    no validation), so that the event loop keeps its time for the requests it can serve.  The answer closes the
    connection: a client that repeats at once must connect again, which paces a flood without making any
    answer wait (under 32 such clients it halves the latency of the cheap requests beside them).
    """

    def __init__(self, app: ASGIApp, limiter: HeavyWorkLimiter, heavy: set[tuple[str, str]]) -> None:
        self.app = app
        self.limiter = limiter
        self.heavy = heavy
        detail = f"busy: this worker already runs {limiter.limit} heavy requests; retry in {RETRY_AFTER_SECONDS} s"
        self.body = json.dumps({"detail": detail}).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and self.limiter.running >= self.limiter.limit
            and (scope["method"], scope["path"]) in self.heavy
        ):
            await send(
                {
                    "type": "http.response.start",
                    "status": 503,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(self.body)).encode()),
                        (b"retry-after", str(RETRY_AFTER_SECONDS).encode()),
                        (b"x-content-type-options", b"nosniff"),
                        (b"cache-control", b"no-store"),
                        (b"connection", b"close"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else self.body})
            return
        await self.app(scope, receive, send)


def document_heavy_work(schema: dict[str, Any], heavy_operations: set[tuple[str, str]]) -> dict[str, Any]:
    """Adds the 503 answer to each heavy operation of the OpenAPI schema."""
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            if (method.upper(), path) in heavy_operations:
                operation.setdefault("responses", {})["503"] = BUSY_RESPONSE
    return schema
