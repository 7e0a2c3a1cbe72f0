"""A bound on the heavy work one worker runs at once: the excess is answered at once with 503 and Retry-After.

Three parts.  :func:`heavy_slot` counts heavy requests in flight and refuses the excess at once, on the event
loop, before any work starts: queueing it would only move the wait.  :func:`in_worker_process` runs a heavy
handler in a small pool of processes (as many as the bound, at most one per core), because numpy holds the
interpreter lock through each long array operation: in a thread beside the event loop, one simulation of
2,000,000 cycles delays every cheap request of the worker by hundreds of milliseconds.  :func:`heavy_work_lifespan`
starts that pool with the worker and closes it with the worker.

The pool's processes run below the worker's priority from their start (the worker lowers each one's priority as
it starts it, before the process has imported anything), and they import every heavy handler's module while the
worker starts, before it serves.  Started on the first heavy request instead, each process imported fastapi at the
worker's own priority, then each router's module (numpy, scipy: up to a second of CPU) on its first call at low
priority: under load the first heavy requests of a worker waited for these imports for 10 to 30 seconds.

The pool ends with the app's lifespan, its processes waited for, so that its queues release their named
semaphores before the worker exits: uvicorn ends a worker stopped by SIGTERM by raising SIGTERM again once the
lifespan is over, which runs no exit handler, and the resource tracker then reported the semaphores as leaked.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import importlib
import inspect
import json
import os
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.context import SpawnContext, SpawnProcess
from typing import Any, TypeVar

from fastapi import Depends, HTTPException, Request
from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

RETRY_AFTER_SECONDS = 1
HEAVY_NICENESS = 10
READY_TIMEOUT_SECONDS = 10.0  # a start-up slower than this (a machine busy with other work) serves anyway


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

# The modules whose handlers run in the pool: each of its processes imports them before it takes a call.
_HEAVY_MODULES: set[str] = set()
# Pools started and not yet closed: an app served without a lifespan (a test client used without `with`) starts
# its pool on first use, closed at exit.
_OPEN_POOLS: set[HeavyWorkPool] = set()
_POOLS_LOCK = threading.Lock()


def _busy(limit: int) -> HTTPException:
    return HTTPException(
        status_code=503,
        detail=f"busy: this worker already runs {limit} heavy requests; retry in {RETRY_AFTER_SECONDS} s",
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


def _lower_priority(pid: int) -> None:
    """Sets pid HEAVY_NICENESS below the calling thread's priority (nice 10 under a worker at nice 0); best effort."""
    with contextlib.suppress(OSError):
        wanted = min(os.getpriority(os.PRIO_PROCESS, 0) + HEAVY_NICENESS, 19)
        if os.getpriority(os.PRIO_PROCESS, pid) < wanted:
            os.setpriority(os.PRIO_PROCESS, pid, wanted)


class LowPriorityProcess(SpawnProcess):
    """A spawned process that its parent lowers in priority as it starts it, before it has imported anything."""

    def start(self) -> None:
        super().start()
        if self.pid is not None:
            _lower_priority(self.pid)


class LowPriorityContext(SpawnContext):
    """spawn, not fork (the worker runs threads, the thread pool and the event loop, which fork does not copy),
    with the processes at low priority from their start."""

    Process = LowPriorityProcess


class HeavyWorkPool:
    """The worker's heavy-work processes: at most the bound, at most one per core, below the worker's priority.

    Opened by each lifespan that serves the app and closed by the last one to end (two test clients of one app
    share it); a heavy request outside any lifespan starts it on first use, and it is then closed at exit.
    """

    def __init__(self, processes: int) -> None:
        self.processes = processes
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None
        self._users = 0

    def executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ProcessPoolExecutor(
                    max_workers=self.processes,
                    mp_context=LowPriorityContext(),
                    initializer=_prepare_process,
                    initargs=(os.getpid(), tuple(sorted(_HEAVY_MODULES))),
                )
                with _POOLS_LOCK:
                    _OPEN_POOLS.add(self)
            return self._executor

    async def run(self, call: Callable[[], Any]) -> Any:
        executor = self.executor()
        try:
            return await asyncio.get_running_loop().run_in_executor(executor, call)
        except BrokenProcessPool:
            self._discard(executor)  # a process died (killed, out of memory): start afresh next time
            raise

    async def open(self) -> None:
        """Starts every process now and waits (at most READY_TIMEOUT_SECONDS) until they have imported the handlers.

        A call submitted while no process is idle starts one more, up to the pool's size; a process takes its first
        call once its initializer has imported every heavy handler's module.
        """
        with self._lock:
            self._users += 1
        executor = self.executor()
        ready = [asyncio.wrap_future(executor.submit(os.getpid)) for _ in range(self.processes)]
        try:
            await asyncio.wait_for(asyncio.gather(*ready), READY_TIMEOUT_SECONDS)
        except TimeoutError:
            pass  # serve anyway: the first heavy requests wait for the processes
        except BrokenProcessPool:
            self._discard(executor)

    def close(self) -> None:
        """Ends one lifespan's use; the last shuts the processes down and waits for them (blocking: run it in a thread).

        Calls still queued are cancelled, a running one is waited for.  Once the executor and its queues are gone,
        their named semaphores are unlinked and unregistered from multiprocessing's resource tracker.
        """
        with self._lock:
            self._users = max(self._users - 1, 0)
            if self._users:
                return
        self.shutdown(wait=True)

    def shutdown(self, wait: bool) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
        with _POOLS_LOCK:
            _OPEN_POOLS.discard(self)
        if executor is not None:
            executor.shutdown(wait=wait, cancel_futures=True)

    def _discard(self, executor: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._executor is executor:
                self._executor = None
        executor.shutdown(wait=False, cancel_futures=True)


def heavy_pool(app: Starlette) -> HeavyWorkPool:
    """The app's pool of heavy-work processes (created, not started, on first use): the bound, at most the cores.

    As many processes as the bound allows and the cores carry: heavy requests beyond the cores (but within the
    bound) wait their turn in the pool; those beyond the bound were refused already.
    """
    with _POOLS_LOCK:
        pool: HeavyWorkPool | None = getattr(app.state, "heavy_pool", None)
        if pool is None:
            limiter: HeavyWorkLimiter | None = getattr(app.state, "heavy_work", None)
            pool = HeavyWorkPool(max(1, min(limiter.limit if limiter else 1, os.cpu_count() or 1)))
            app.state.heavy_pool = pool
        return pool


@contextlib.asynccontextmanager
async def heavy_work_lifespan(app: Starlette) -> AsyncIterator[None]:
    """The app's lifespan: its heavy-work processes start with it and are shut down, waited for, when it ends."""
    pool = heavy_pool(app)
    await pool.open()
    try:
        yield
    finally:
        await asyncio.to_thread(pool.close)


@atexit.register
def _close_pools_at_exit() -> None:
    with _POOLS_LOCK:
        pools = list(_OPEN_POOLS)
    for pool in pools:
        pool.shutdown(wait=False)


def _watch_parent(parent: int, interval: float = 0.5) -> None:
    while os.getppid() == parent:
        time.sleep(interval)
    os._exit(0)


def _prepare_process(parent: int, modules: tuple[str, ...]) -> None:
    """In a pool process, before its first call: end once the worker is gone, and import every heavy handler.

    The watch ends the process when its worker was killed or stopped without cleanup.  The imports (numpy, scipy,
    the routers) take about a second of CPU, paid here at low priority while the worker starts.
    """
    threading.Thread(target=_watch_parent, args=(parent,), name="exit-with-parent", daemon=True).start()
    for module in modules:
        importlib.import_module(module)


def _run_original(module: str, name: str, arguments: dict[str, Any]) -> Any:
    """In a pool process: the undecorated handler module.name called with the request's arguments."""
    handler = inspect.unwrap(getattr(importlib.import_module(module), name))
    return handler(**arguments)


async def run_heavy(app: Starlette, call: Callable[[], Any]) -> Any:
    """`call` (a picklable function of a heavy module, with its arguments) in the app's heavy-work processes, off
    this worker's interpreter, so that cheap requests keep their share of it; a pool that broke is a 503."""
    try:
        return await heavy_pool(app).run(call)
    except BrokenProcessPool:
        limiter: HeavyWorkLimiter | None = getattr(app.state, "heavy_work", None)
        raise _busy(limiter.limit if limiter else 1) from None


def in_worker_process(handler: Handler) -> Handler:
    """Run a sync handler in the app's heavy-work processes; its arguments and answer travel by pickle.

    The wrapper keeps the handler's signature (so FastAPI reads the same parameters) and adds the request,
    which it needs to find the app's pool.  Exceptions (a ParameterError or an InputError naming a parameter) come
    back as they are.
    """
    signature = inspect.signature(handler, eval_str=True)
    request_parameter = inspect.Parameter("heavy_request", inspect.Parameter.KEYWORD_ONLY, annotation=Request)
    _HEAVY_MODULES.add(handler.__module__)

    @functools.wraps(handler)
    async def run(heavy_request: Request, **arguments: Any) -> Any:
        call = functools.partial(_run_original, handler.__module__, handler.__name__, arguments)
        return await run_heavy(heavy_request.app, call)

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
