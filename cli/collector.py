"""The CLI process and Python's cycle collector, whose passes over what imports make find nothing.

A small ingest imports pyarrow, numpy, duckdb, deltalake, typer and rich: some 55k objects
(modules, classes, functions) that live as long as the process. The collector passed over them
again and again while they were being made (about 100 passes, 35-50 ms of a 0.5 s ingest) and
twice more on the way out (about 45 ms), finding no garbage. Both are skipped here: a command
pauses the collector while it imports what it needs and then freezes what the imports made, out
of every later pass (`imports`); on the way out, everything is frozen before the interpreter's
last passes (`for_the_process`). Garbage made meanwhile is still freed by reference counting;
only cycles made during the imports stay, as the modules do.

The freeze lasts for the command: in a process that goes on after it (the tests call main()),
the frozen objects go back to the collector when the command returns.
"""

from __future__ import annotations

import atexit
import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def for_the_process() -> Iterator[None]:
    """Around a command: the exit hook that freezes everything (it runs before the interpreter's
    last passes; registered once however often a command runs in the process), and the objects
    `imports` froze given back to the collector afterwards."""
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)
    try:
        yield
    finally:
        gc.unfreeze()


@contextmanager
def imports() -> Iterator[None]:
    """The collector paused while a command imports its modules; what they made frozen after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
