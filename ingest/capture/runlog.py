"""The core of a recording: numbers events and writes each to the spool before returning.

Every event is numbered and written under one lock, so a run's events reach each spool
file in seq order; the write goes to the OS before `emit` returns (spool.py), so a call
the user's code saw return is never lost to a kill -9. The provider wrappers
(llm_call.py) and the user-facing Recorder (recorder.py) build on this; it imports
neither of them.
"""

from __future__ import annotations

import itertools
import threading
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...schema.native import dumps_event
from ..prices import PriceRegistry
from .frame import CURRENT, Frame, new_id, now
from .spool import SpoolWriter


class RunLog:
    def __init__(self, run_id: str, benchmark: str, attrs: dict[str, Any], spool: Path, *,
                 capture_content: bool = False, fsync: bool = False, prices: PriceRegistry | None = None):
        self.run_id, self.benchmark, self.attrs = run_id, benchmark, dict(attrs)
        self.capture_content = capture_content
        self.prices = prices or PriceRegistry.load()
        self._lock = threading.Lock()
        self._seq = itertools.count(1)
        self._models: Counter[str] = Counter()
        self.spool = SpoolWriter(spool, run_id, fsync=fsync)
        self.root = Frame(self)

    def frame(self) -> Frame:
        current = CURRENT.get()
        return current if current is not None and current.owner is self else self.root

    def emit(self, kind: str, frame: Frame | None = None, **fields: Any) -> None:
        """Record one event now: numbered, then written to the spool before this returns."""
        frame = frame or self.frame()
        with self._lock:
            event = {"event_id": new_id(), "run_id": self.run_id, "benchmark": self.benchmark, "kind": kind,
                     "seq": next(self._seq), "ts": now(), "task_id": frame.task_id, "trace_id": frame.trace_id,
                     "parent_span_id": frame.span_id, "agent": frame.agent, **fields}
            self.spool.write(dumps_event(event))

    def safely(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run recording code; a failure becomes a warning and the user's program goes on."""
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - recording must never break the caller
            warnings.warn(f"tracewh: could not record {what}: {type(e).__name__}: {e}", RuntimeWarning, stacklevel=3)
            return None

    def note_model(self, model: str | None) -> None:
        """Count the orchestrator's models: the run's model is the one called most."""
        if model:
            with self._lock:
                self._models[model] += 1

    def most_called_model(self) -> str | None:
        return self._models.most_common(1)[0][0] if self._models else None
