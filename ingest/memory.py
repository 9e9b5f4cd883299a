"""How staging uses the process's memory: the cycle collector paused while it runs, and freed
memory kept for reuse while it runs, handed back to the OS when it ends.

Staging allocates and frees the same kinds of buffers over and over: a block of lines, its
dicts and payload texts, a chunk's Arrow arrays. glibc's allocator gives large blocks back to
the OS as soon as they are freed (mmap'd blocks from 128 kB, the heap's top past 128 kB), and
every new block is then faulted in again, a page at a time: 1.5 million page faults, a sixth
of the CPU, in the 1.86M-event native ingest of the bench.
"""

from __future__ import annotations

import ctypes
import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pyarrow as pa

_PAUSES = 0  # stagings under way that paused Python's cycle collector
_PAUSE_LOCK = threading.Lock()
_WAS_ENABLED = True


@contextmanager
def cycle_collection_paused() -> Iterator[None]:
    """Staging holds a chunk of event dicts (and their payloads) alive at a time; with the cycle
    collector on, its full passes over them cost 15% of staging's CPU. Events are trees, freed by
    reference counting, so the collector is paused while any ingest stages (threads included)."""
    global _PAUSES, _WAS_ENABLED
    with _PAUSE_LOCK:
        if _PAUSES == 0:
            _WAS_ENABLED = gc.isenabled()
            gc.disable()
        _PAUSES += 1
    try:
        yield
    finally:
        with _PAUSE_LOCK:
            _PAUSES -= 1
            if _PAUSES == 0 and _WAS_ENABLED:
                gc.enable()


def release_freed_memory() -> None:
    """Hand back to the OS what staging freed (millions of event dicts, Arrow buffers of every
    chunk), which the allocators otherwise keep: about 0.1 GB at scale 1, resident through the
    gate, the dedup and the data-file writes, whose DuckDB budget comes on top of it."""
    pa.default_memory_pool().release_unused()
    try:
        ctypes.CDLL(None).malloc_trim(0)  # glibc's; elsewhere there is nothing to call
    except (OSError, AttributeError):
        pass


# mallopt(3) parameters
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3


def reuse_freed_memory() -> None:
    """Keep freed blocks in this process for its next allocations (glibc's allocator; elsewhere
    nothing to set): blocks up to 32 MB (an 8 MB block of lines included) come from the heap,
    and up to 512 MB freed at its top stays there. release_freed_memory() still hands it all
    back. For staging workers, which the ingest owns: set in a user's process, it would change
    how that process holds memory. The native ingest: 0.55M page faults against 1.5M, 7% less
    wall time (paired runs)."""
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)
        libc.mallopt(M_TRIM_THRESHOLD, 512 << 20)
        libc.mallopt(M_TOP_PAD, 16 << 20)
    except (OSError, AttributeError):
        pass
