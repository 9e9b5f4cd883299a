"""Threads of the service that yield the CPU: Linux's nice is per thread, so one thread (and the
DuckDB threads it starts) can run at a lower priority than the rest of the server."""

from __future__ import annotations

import os
import threading
from contextlib import suppress

NICENESS = 10  # a query's work in the server (its workers, queries/isolation.py, run lower still)


def yield_cpu() -> None:
    """Lower the calling thread's CPU priority to NICENESS (for good: raising it back needs
    privileges). Not Linux: threads keep the process's priority."""
    with suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICENESS)
