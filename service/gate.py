"""Bounded concurrency for queries: a few run at once, a few more wait, the rest are told to
come back later (503 + Retry-After), so a burst of heavy queries cannot starve the event loop,
/health, or the threads cheap requests need.

Waiting happens in the event loop, not in a thread: a waiting request holds no worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from fastapi import HTTPException
from starlette.concurrency import run_in_threadpool

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
        """`work(*args)` in a worker thread, once a slot is free."""
        async with self.slot():
            return await run_in_threadpool(work, *args)


def _busy(wait_s: float) -> HTTPException:
    return HTTPException(503, "the server is busy with other queries; retry shortly",
                         headers={"Retry-After": str(max(1, round(wait_s)))})
