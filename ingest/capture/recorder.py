"""`tracewh.record(...)`: record a harness's LLM calls, tools, delegations and scores as events.

Events are shaped like the DecisionBench archive adapter's (orchestrator steps numbered per
task, peer calls children of their delegation span), so every view treats captured runs as
ingested ones. A failure to record is a warning, never an exception in the user's code.

Content: without `capture_content=True` no message text, tool arguments, tool results,
delegation messages or error messages are recorded (only names, ids, counts, shapes, error
classes and HTTP statuses). Keyword fields you
pass to `task()` yourself are recorded as given.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...paths import default_home
from .clients import wrap_client
from .frame import CURRENT, Frame, new_id, new_span
from .runlog import RunLog


class ToolCall:
    """Handle of `with rec.tool(...) as t`: set `t.result` (and optionally `t.error`)."""

    def __init__(self) -> None:
        self.result: Any = None
        self.error: str | None = None


class Recorder(RunLog):
    """One recorded run. Get one from `tracewh.record(...)`."""

    def wrap(self, client: Any) -> Any:
        """Record every chat/messages call of an OpenAI, AsyncOpenAI, Anthropic or AsyncAnthropic client.

        Returns the same client object: types, retries, streams and exceptions are the SDK's own.
        """
        return wrap_client(self, client)

    def _content(self, value: Any) -> Any:
        return value if self.capture_content else None

    @contextmanager
    def task(self, task_id: str, **payload: Any) -> Iterator[Frame]:
        frame = Frame(self, task_id=task_id, trace_id=new_id(), span_id=new_span())
        self.safely("task start", self.emit, "task_started", frame, span_id=frame.span_id,
                    parent_span_id=None, payload=payload or None)
        token = CURRENT.set(frame)
        status = "ok"
        try:
            yield frame
        except BaseException:
            status = "error"
            raise
        finally:
            CURRENT.reset(token)
            self.safely("task end", self.emit, "task_finished", frame, span_id=frame.span_id, parent_span_id=None,
                        payload={"status": status})

    @contextmanager
    def tool(self, name: str, arguments: dict[str, Any] | None = None) -> Iterator[ToolCall]:
        frame, handle, span, started = self.frame(), ToolCall(), new_span(), time.perf_counter()
        self.safely("tool call", self.emit, "tool_call", frame, tool_name=name, span_id=span,
                    payload={"step": frame.steps[0] or None,
                             **({"arguments": arguments or {}} if self.capture_content else {})})
        try:
            yield handle
        except BaseException as e:
            handle.error = handle.error or (f"{type(e).__name__}: {e}" if self.capture_content else type(e).__name__)
            raise
        finally:
            result = self._content(handle.result)
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
                    payload={"to_model": to, "to_agent": to_agent or "peer", "message": self._content(subtask),
                             "depth": parent.depth + 1, "step": parent.steps[0] or None, "status": "ok"})
        child = Frame(self, parent.task_id, parent.trace_id, span, to_agent or "peer", parent.depth + 1, parent.steps)
        token = CURRENT.set(child)
        try:
            yield child
        finally:
            CURRENT.reset(token)

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

    def start(self) -> None:
        self.emit("run_started", self.root, payload={"attrs": self.attrs})
        self.emit("run_attrs", self.root, ts=None, payload=self.attrs)

    def close(self) -> None:
        if "model" not in self.attrs and (model := self.most_called_model()):  # the orchestrator's
            self.emit("run_attrs", self.root, ts=None, payload={"model": model})
        self.emit("run_finished", self.root, payload={"status": "ok"})
        self.spool.close()

    def ingest_into(self, warehouse: Any) -> None:
        """Ingest the run's spool folder into `warehouse` (a Warehouse). A store created here takes
        the spool folder's permission bits (0700 unless you made it otherwise): it holds the same
        events, which may include prompts. An existing store keeps its own."""
        from ...warehouse.permissions import create_like

        create_like(warehouse.path, self.spool.folder.parent)
        warehouse.ingest([self.spool.folder])


@contextmanager
def record(run_id: str, benchmark: str = "custom", attrs: dict[str, Any] | None = None, *,
           spool: str | Path | None = None, capture_content: bool = False, fsync: bool = False) -> Iterator[Recorder]:
    """Record a run into a spool folder (default $TRACEWH_HOME/spool); `tracewh.record` adds `warehouse=`.

    Each event is written to the OS before the recorded call returns (a killed process loses
    no call it returned); `fsync=True` also waits for the disk, which survives power loss.
    """
    recorder = Recorder(run_id, benchmark, attrs or {}, Path(spool) if spool else default_home() / "spool",
                        capture_content=capture_content, fsync=fsync)
    recorder.safely("run start", recorder.start)
    try:
        yield recorder
    finally:
        recorder.safely("run end", recorder.close)
