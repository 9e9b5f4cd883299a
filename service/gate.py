"""Bounded concurrency for queries: a few run at once, a few more wait, the rest are told to
come back later (503 + Retry-After), so a burst of heavy queries cannot starve the event loop,
/health, or the threads cheap requests need.

Waiting happens in the event loop, not in a thread: a waiting request holds no worker thread.

A query's thread runs at a lower CPU priority (service/priority.py): what it
does in the server (the guard, a cached answer, rendering rows as JSON) yields to /health, to
the OTLP receiver's answers and to the commit process that makes new spans queryable. Under a
closed loop of clients answered from the result cache, 120 s live: export to queryable p50 / p99
2.0 / 3.9 s -> 1.7 / 3.1 s, query p99 0.25 -> 0.34 s (docs/performance.md, "Tenth stop").
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any, TypeVar

from fastapi import HTTPException

from .priority import yield_cpu

if TYPE_CHECKING:
    from ..api import Warehouse

T = TypeVar("T")
# What the web page's routes are given: run work on a fresh read of the store once the gate lets it.
Reading = Callable[[Callable[["Warehouse"], T]], Awaitable[T]]


class QueryGate:
    def __init__(self, running: int, waiting: int, wait_s: float):
        self.running, self.waiting, self.wait_s = running, waiting, wait_s
        self._slots: asyncio.Semaphore | None = None  # made in the server's event loop, on first use
        self._queued = 0

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.running)
        if self._queued >= self.waiting + self.running:
            raise _busy(self.wait_s)
        self._queued += 1
        try:
            try:
                await asyncio.wait_for(self._slots.acquire(), self.wait_s)
            except TimeoutError:
                raise _busy(self.wait_s) from None
            try:
                yield
            finally:
                self._slots.release()
        finally:
            self._queued -= 1

    async def run(self, work: Callable[..., T], *args: Any) -> T:
        """`work(*args)` in a query thread, once a slot is free."""
        async with self.slot():
            return await _in_query_thread(work, *args)


async def _in_query_thread(work: Callable[..., T], *args: Any) -> T:
    """`work(*args)` in a thread of its own at the query priority, ended with the work: a pool's
    threads would stay, and a process forked beside them (an ingest's workers, in one process
    with a service, as in tests) crashed in the child."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()  # as starlette's run_in_threadpool passes it

    def run() -> None:
        yield_cpu()
        try:
            result = context.run(work, *args)
        except BaseException as error:  # noqa: BLE001 - raised again in the request
            loop.call_soon_threadsafe(_settle, answer, None, error)
        else:
            loop.call_soon_threadsafe(_settle, answer, result, None)

    threading.Thread(target=run, name="tracewh-query", daemon=True).start()
    try:
        return await asyncio.shield(answer)
    except asyncio.CancelledError:  # the slot stays taken until the work ends, as with run_in_threadpool
        with suppress(BaseException):
            await answer
        raise


def _settle(answer: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if answer.done():  # cancelled while waiting for the work a second time (the server stopping)
        return
    if error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(result)


def _busy(wait_s: float) -> HTTPException:
    return HTTPException(503, "the server is busy with other queries; retry shortly",
                         headers={"Retry-After": str(max(1, round(wait_s)))})
