"""`tracewh.record(...)`: record a harness's LLM calls, tools, delegations and scores as events.

Nesting lives in a ContextVar, so asyncio tasks inherit it and threads do when run with
`contextvars.copy_context().run(...)`; code with no frame records at run level. Events are
shaped like the DecisionBench archive adapter's (orchestrator steps numbered per task,
peer calls children of their delegation span), so every view treats captured runs as
ingested ones. A failure to record is a warning, never an exception in the user's code.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ...paths import default_home
from ...schema.native import dumps_event
from ..prices import PriceRegistry
from .spool import SpoolWriter


@dataclass
class Frame:
    """Where new events hang: task, span, acting agent, delegation depth."""

    recorder: Recorder
    task_id: str | None = None
    trace_id: str | None = None
    span_id: str | None = None
    agent: str = "orchestrator"
    depth: int = 0
    steps: list[int] = field(default_factory=lambda: [0])  # orchestrator steps of the task, shared by children


_FRAME: ContextVar[Frame | None] = ContextVar("tracewh_frame", default=None)


def new_span() -> str:
    # random.getrandbits: a fraction of uuid4's cost on the per-call path; CPython reseeds it after fork.
    return f"{random.getrandbits(64):016x}"


def new_id() -> str:
    return f"{random.getrandbits(128):032x}"


def now() -> datetime:
    return datetime.now(timezone.utc)


class ToolCall:
    """Handle of `with rec.tool(...) as t`: set `t.result` (and optionally `t.error`)."""

    def __init__(self) -> None:
        self.result: Any = None
        self.error: str | None = None


class Recorder:
    def __init__(self, run_id: str, benchmark: str, attrs: dict[str, Any], spool: Path, *,
                 capture_content: bool = False, flush_every: int = 64, flush_seconds: float = 0.2,
                 prices: PriceRegistry | None = None):
        self.run_id, self.benchmark, self.attrs = run_id, benchmark, dict(attrs)
        self.capture_content = capture_content
        self.prices = prices or PriceRegistry.load()
        self.flush_every, self.flush_seconds = flush_every, flush_seconds
        self._lock, self._write_lock = threading.Lock(), threading.Lock()
        self._seq = itertools.count(1)
        self._pending: list[Any] = []
        self._models: Counter[str] = Counter()
        self.spool = SpoolWriter(spool, run_id)
        self.root = Frame(self)
        # Batches are written and fsynced by a background thread, off the SDK call's path:
        # every flush_seconds, or sooner once flush_every events wait.
        self._wake, self._closing = threading.Event(), False
        self._flusher = threading.Thread(target=self._flush_loop, name="tracewh-spool", daemon=True)
        self._flusher.start()

    # -- emitting ---------------------------------------------------------------
    # Pending entries are lines, or (seq, builder) pairs whose line is built at flush time,
    # off the SDK call's path. Numbers are drawn under the lock that queues the entry, so
    # every spool file holds a run's events in seq order.

    def frame(self) -> Frame:
        current = _FRAME.get()
        return current if current is not None and current.recorder is self else self.root

    def event(self, kind: str, frame: Frame, seq: int, **fields: Any) -> dict[str, Any]:
        """One event dict (run, task and span filled from the frame)."""
        return {"event_id": new_id(), "run_id": self.run_id, "benchmark": self.benchmark, "kind": kind,
                "seq": seq, "ts": now(), "task_id": frame.task_id, "trace_id": frame.trace_id,
                "parent_span_id": frame.span_id, "agent": frame.agent, **fields}

    def emit(self, kind: str, frame: Frame | None = None, **fields: Any) -> dict[str, Any]:
        """Record one event now; returns it."""
        frame = frame or self.frame()
        with self._lock:
            event = self.event(kind, frame, next(self._seq), **fields)
            self._pending.append(dumps_event(event))
        self._nudge()
        return event

    def defer(self, build: Callable[[int], dict[str, Any] | None]) -> None:
        """Number an event now; `build(seq)` makes it at the next flush, off the caller's path."""
        with self._lock:
            self._pending.append((next(self._seq), build))
        self._nudge()

    def _nudge(self) -> None:
        if len(self._pending) >= self.flush_every:
            self._wake.set()

    def _line(self, entry: bytes | tuple[int, Callable[[int], dict[str, Any] | None]]) -> bytes | None:
        if isinstance(entry, bytes):
            return entry
        event = self.safely("llm call", entry[1], entry[0])
        return dumps_event(event) if event is not None else None

    def flush(self) -> None:
        """Build the deferred events, then write and fsync everything pending as one batch."""
        with self._write_lock:
            with self._lock:
                entries, self._pending = self._pending, []
            lines = [line for line in map(self._line, entries) if line is not None]
            self.safely("spool batch", self.spool.write_batch, lines)

    def _flush_loop(self) -> None:
        while not self._closing:
            self._wake.wait(self.flush_seconds)
            self._wake.clear()
            self.flush()

    def safely(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run recording code; a failure becomes a warning and the user's program goes on."""
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - recording must never break the caller
            warnings.warn(f"tracewh: could not record {what}: {type(e).__name__}: {e}", RuntimeWarning, stacklevel=3)
            return None

    # -- the user's API ----------------------------------------------------------

    def wrap(self, client: Any) -> Any:
        """Record every chat/messages call of an OpenAI, AsyncOpenAI, Anthropic or AsyncAnthropic client.

        Returns the same client object: types, retries, streams and exceptions are the SDK's own.
        """
        from .sdk import wrap_client

        return wrap_client(self, client)

    @contextmanager
    def task(self, task_id: str, **payload: Any) -> Iterator[Frame]:
        frame = Frame(self, task_id=task_id, trace_id=new_id(), span_id=new_span())
        self.safely("task start", self.emit, "task_started", frame, span_id=frame.span_id,
                    parent_span_id=None, payload=payload or None)
        token = _FRAME.set(frame)
        status = "ok"
        try:
            yield frame
        except BaseException:
            status = "error"
            raise
        finally:
            _FRAME.reset(token)
            self.safely("task end", self.emit, "task_finished", frame, span_id=frame.span_id, parent_span_id=None,
                        payload={"status": status})

    @contextmanager
    def tool(self, name: str, arguments: dict[str, Any] | None = None) -> Iterator[ToolCall]:
        frame, handle, span, started = self.frame(), ToolCall(), new_span(), time.perf_counter()
        self.safely("tool call", self.emit, "tool_call", frame, tool_name=name, span_id=span,
                    payload={"arguments": arguments or {}, "step": frame.steps[0] or None})
        try:
            yield handle
        except BaseException as e:
            handle.error = handle.error or f"{type(e).__name__}: {e}"
            raise
        finally:
            result = handle.result if self.capture_content else None
            self.safely("tool result", self.emit, "tool_result", frame, tool_name=name, span_id=new_span(),
                        parent_span_id=span, latency_s=time.perf_counter() - started,
                        payload={"status": "error" if handle.error else "ok", "error": handle.error,
                                 "result": result if isinstance(result, (str, int, float, dict, list)) else None})

    @contextmanager
    def delegate(self, to: str, subtask: str | None = None, to_agent: str | None = None) -> Iterator[Frame]:
        """Hand work to another model/agent: calls made inside are the delegate's, children of this span."""
        parent = self.frame()
        span = new_span()
        self.safely("delegation", self.emit, "delegation", parent, span_id=span, tool_name="call_model",
                    payload={"to_model": to, "to_agent": to_agent or "peer", "message": subtask,
                             "depth": parent.depth + 1, "step": parent.steps[0] or None, "status": "ok"})
        child = Frame(self, parent.task_id, parent.trace_id, span, to_agent or "peer", parent.depth + 1, parent.steps)
        token = _FRAME.set(child)
        try:
            yield child
        finally:
            _FRAME.reset(token)

    def score(self, quality: float | None = None, **metrics: float) -> None:
        """Record the task's quality (in [0, 1]) and any other named metrics."""
        for metric, value in ({"quality": quality} | metrics).items():
            if value is not None:
                self.safely("score", self.emit, "score", score=float(value), span_id=new_span(),
                            payload={"metric": metric})

    def registry(self, name: str, entries: Any) -> None:
        """Reference data the run's views need, e.g. registry("model_pool", [{"model": ..., "vendor": ...}])."""
        self.safely("registry", self.emit, "registry", self.root, payload={"name": name, "entries": entries})

    # -- lifecycle --------------------------------------------------------------

    def note_model(self, model: str | None) -> None:
        if model:
            self._models[model] += 1

    def start(self) -> None:
        self.emit("run_started", self.root, payload={"attrs": self.attrs})
        self.emit("run_attrs", self.root, ts=None, payload=self.attrs)

    def close(self) -> None:
        self._closing = True
        self._wake.set()
        self._flusher.join()
        self.flush()  # builds the deferred calls, which count the models called
        if "model" not in self.attrs and self._models:  # the orchestrator: the model called most
            self.emit("run_attrs", self.root, ts=None, payload={"model": self._models.most_common(1)[0][0]})
        self.emit("run_finished", self.root, payload={"status": "ok"})
        self.flush()
        self.spool.close()


@contextmanager
def record(run_id: str, benchmark: str = "custom", attrs: dict[str, Any] | None = None, *,
           spool: str | Path | None = None, warehouse: str | Path | None = None,
           capture_content: bool = False, flush_every: int = 64) -> Iterator[Recorder]:
    """Record a run into a spool folder (default $TRACEWH_HOME/spool); with `warehouse`, ingest it on exit."""
    recorder = Recorder(run_id, benchmark, attrs or {}, Path(spool) if spool else default_home() / "spool",
                        capture_content=capture_content, flush_every=flush_every)
    recorder.safely("run start", recorder.start)
    try:
        yield recorder
    finally:
        recorder.safely("run end", recorder.close)
        if warehouse is not None:
            recorder.safely("ingest into the warehouse", _ingest, Path(warehouse), recorder.spool.folder)


def _ingest(warehouse: Path, folder: Path) -> None:
    from ...warehouse.api import Warehouse

    Warehouse(warehouse).ingest([folder])
