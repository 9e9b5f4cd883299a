"""A run's records.jsonl and traces read into Arrow columns (EventBatch, adapters/base.py), a
chunk of files at a time.

events.py turns every record into event dicts, which the pipeline then checks and converts a
field at a time: most of a DecisionBench ingest's time. Here the same reading gives a tuple per
event, in a table per kind of event, and each table's columns are converted once per chunk by
the conversion the pipeline gives dicts (bulk.convert_column). The fields events.py checks but
stores inside payloads or ids (step, n_steps, error, content, call ids, ts, model, ...) are
checked here as strictly: exactly a str, an int that is not a bool, a dict, a list. Anything
else (a missing or mistyped field, a quality out of [0, 1], an unknown trace type, a blank or
invalid line, a file over MAX_FILE_BYTES) raises Irregular, and events.py reads the chunk
record by record, whose errors name file, line and field. The events are the same either way:
tests/test_fast_paths.py ingests every benchmark format, and damaged runs, both ways.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from ....schema import event_id
from ...bulk import Irregular, convert_column
from ...context import AdapterContext
from ...sources import SourceFile
from ...toolargs import parse_arguments
from .records import BENCHMARK, DELEGATE_TOOL, RunFiles, trace_task

CHUNK_BYTES = 4 << 20  # files read into one batch: about 15k events
MAX_FILE_BYTES = 16 << 20  # a larger trace is read record by record, a line at a time
_TEXT = (str, type(None))  # an optional string
_INTEGER = (int, type(None))  # an optional integer (bool excluded: its class is not int)
_NUMBER = (int, float)
ORCHESTRATOR = "orchestrator"


def chunks(files: list[SourceFile]) -> Iterator[list[SourceFile]]:
    """The files in reading order, in runs of about CHUNK_BYTES."""
    chunk, size = [], 0
    for file in files:
        chunk.append(file)
        size += file.plain_bytes or file.stored_bytes
        if size >= CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


class _Kind:
    """The events of one kind: a tuple each, of LOCATION's values and then `columns`'."""

    LOCATION = {"file": pa.string(), "line": pa.int64(), "sub": pa.int64(), "seq": pa.int64()}

    def __init__(self, kind: str, *columns: str):
        self.kind, self.columns, self.rows = kind, columns, []

    def table(self) -> pa.Table:
        values = list(zip(*self.rows))
        arrays = {name: pa.array(column, type) for (name, type), column in zip(self.LOCATION.items(), values)}
        arrays["kind"] = pa.repeat(pa.scalar(self.kind), len(self.rows))
        arrays.update((name, convert_column(name, column))
                      for name, column in zip(self.columns, values[len(self.LOCATION):]))
        return pa.table(arrays)


class RunReader(Protocol):
    """What a chunk reader uses of the run's reader (events.py's _RunReader): the run's files
    and identity, the event count so far, and the ids it keeps for the run."""

    run: RunFiles
    ctx: AdapterContext
    run_id: str
    orchestrator: str
    seq: int

    def span(self, task_id: str, *parts: object) -> str: ...

    def trace_id(self, task_id: str) -> str: ...


class ChunkReader:
    """A chunk of one run's records and trace files -> their events as columns. It numbers
    events on from the run reader's `seq` and shares its ids (events.py's _RunReader)."""

    def __init__(self, reader: RunReader):
        self.reader, self.orchestrator, self.prices = reader, reader.orchestrator, reader.ctx.prices
        self.finished = _Kind("task_finished", "task_id", "trace_id", "model", "agent", "cost_usd", "latency_s",
                              "payload")
        self.scores = _Kind("score", "task_id", "trace_id", "model", "agent", "score", "payload")
        self.calls = _Kind("llm_call", "task_id", "trace_id", "agent", "model", "ts", "span_id", "parent_span_id",
                           "prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens",
                           "finish_reason", "latency_s", "cost_usd", "subtask", "payload")
        tool = ("task_id", "trace_id", "agent", "model", "subtask", "ts", "span_id", "parent_span_id", "tool_name",
                "payload")
        self.tools, self.delegations = _Kind("tool_call", *tool), _Kind("delegation", *tool)
        self.results = _Kind("tool_result", "task_id", "trace_id", "agent", "tool_name", "span_id", "parent_span_id",
                             "latency_s", "payload")

    def read(self, files: list[SourceFile]) -> pa.RecordBatch:
        """The files' events, in reading order (Irregular: read them record by record instead)."""
        for file in files:
            records = _records(file, self.reader.ctx.limits.max_line_bytes)
            if file is self.reader.run.records:
                for line, record in records:
                    self._record(file.name, line, record)
            else:
                task_id = trace_task(self.reader.run, file)
                for line, record in records:
                    self._step(file.name, task_id, line, record)
        for file in files:  # as the record-by-record reader reports them, once the chunk is read
            self.reader.ctx.progress(file.stored_bytes)
        return self._columns()

    def _seq(self) -> int:
        self.reader.seq += 1
        return self.reader.seq

    def _columns(self) -> pa.RecordBatch:
        kinds = [k.table() for k in (self.finished, self.scores, self.calls, self.tools, self.delegations,
                                      self.results) if k.rows]
        if not kinds:
            return pa.record_batch({"line": pa.array([], pa.int64())})
        events = pa.concat_tables(kinds, promote_options="default")
        events = events.take(pc.sort_indices(events["seq"]))  # reading order
        n = events.num_rows
        events = events.append_column("run_id", pa.repeat(pa.scalar(self.reader.run_id), n))
        events = events.append_column("benchmark", pa.repeat(pa.scalar(BENCHMARK), n))
        return events.combine_chunks().to_batches()[0]

    # ---------------------------------------------------------------- records.jsonl (§4)
    def _record(self, file: str, line: int, r: dict[str, Any]) -> None:
        task_id, quality, error, n_steps = r.get("task_id"), r.get("quality"), r.get("error"), r.get("n_steps")
        if (task_id.__class__ is not str or quality.__class__ not in _NUMBER or not 0 <= quality <= 1
                or error.__class__ not in _TEXT or n_steps.__class__ not in _INTEGER):
            raise Irregular("a record events.py refuses or reads otherwise")
        trace = self.reader.trace_id(task_id)
        payload = {"n_steps": n_steps, "error": error, "status": "error" if error else "ok"}
        self.finished.rows.append((file, line, 0, self._seq(), task_id, trace, self.orchestrator, ORCHESTRATOR,
                                   r.get("cost_usd"), r.get("latency_s"), payload))
        self.scores.rows.append((file, line, 1, self._seq(), task_id, trace, self.orchestrator, ORCHESTRATOR,
                                 quality, {"metric": "quality"}))

    # ---------------------------------------------------------------- traces (§5)
    def _step(self, file: str, task_id: str, line: int, t: dict[str, Any]) -> None:
        kind = t.get("type")
        if kind == "completion":
            self._completion(file, task_id, line, t)
        elif kind == "tool_result":
            self._tool_result(file, task_id, line, t)
        elif kind == "peer_completion":
            parent = t.get("parent_tool_call_id")
            if parent.__class__ is not str:
                raise Irregular("parent_tool_call_id")
            self._llm_call(file, task_id, line, t, "peer", self.reader.span(task_id, "call", parent), None, {})
        else:
            raise Irregular("trace type")

    def _llm_call(self, file: str, task_id: str, line: int, t: dict[str, Any], agent: str, parent: str,
                  subtask: str | None, more: dict[str, Any]) -> tuple[str, str | None]:
        """Adds the llm_call event of trace line `t`; its span id and ts."""
        usage, model, content, ts = t.get("usage"), t.get("model"), t.get("content"), t.get("ts")
        if usage is None:
            usage = {}
        if (usage.__class__ is not dict or model.__class__ not in _TEXT or content.__class__ not in _TEXT
                or ts.__class__ not in _TEXT):
            raise Irregular("usage, model, content or ts")
        model = model or self.orchestrator
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        cached = usage.get("cached_tokens")
        cost = t.get("cost_usd")
        if cost is None:
            try:  # token counts of other types are refused by their columns' conversion, or here
                cost = self.prices.cost(model, prompt, completion, cached)
            except TypeError:
                raise Irregular("token counts") from None
        span = event_id(self.reader.run_id, task_id, "line", line)[:16]
        payload = {"content": content, "content_chars": len(content or ""), **more}
        self.calls.rows.append((file, line, 0, self._seq(), task_id, self.reader.trace_id(task_id), agent, model, ts,
                                span, parent, prompt, completion, usage.get("reasoning_tokens"), cached,
                                t.get("finish_reason"), t.get("latency_s"), cost, subtask, payload))
        return span, ts

    def _completion(self, file: str, task_id: str, line: int, t: dict[str, Any]) -> None:
        step, requested = t.get("step"), t.get("tool_calls")
        if requested is None:
            requested = []
        if step.__class__ is not int or requested.__class__ is not list:
            raise Irregular("step or tool_calls")
        calls = []
        for i, c in enumerate(requested):
            if (c.__class__ is not dict or (call_id := c.get("id")).__class__ not in _TEXT
                    or c.get("name").__class__ is not str):
                raise Irregular("a tool call")
            calls.append({"id": call_id or f"line{line}-{i}", "name": c["name"],
                          "arguments": parse_arguments(c.get("arguments"))})
        subtask = f"step-{step}"
        span, ts = self._llm_call(file, task_id, line, t, ORCHESTRATOR, self.reader.span(task_id, "task"), subtask,
                                  {"step": step, "tool_calls": calls})
        trace = self.reader.trace_id(task_id)
        for sub, c in enumerate(calls, 1):
            row = (file, line, sub, self._seq(), task_id, trace, ORCHESTRATOR, self.orchestrator, subtask, ts,
                   self.reader.span(task_id, "call", c["id"]), span)
            if c["name"] == DELEGATE_TOOL:
                args = c["arguments"]
                self.delegations.rows.append((*row, DELEGATE_TOOL, {
                    "to_model": args.get("model"), "message": args.get("subtask"), "budget_usd": args.get("budget_usd"),
                    "depth": 1, "step": step, "call_id": c["id"]}))
            else:
                self.tools.rows.append((*row, c["name"], {"arguments": c["arguments"], "step": step,
                                                          "call_id": c["id"]}))

    def _tool_result(self, file: str, task_id: str, line: int, t: dict[str, Any]) -> None:
        call_id, error, step, content = t.get("tool_call_id"), t.get("error"), t.get("step"), t.get("content")
        if (call_id.__class__ is not str or error.__class__ not in _TEXT or step.__class__ not in _INTEGER
                or content.__class__ not in _TEXT):
            raise Irregular("a tool result")
        payload = {"call_id": call_id, "step": step, "status": "error" if error else "ok", "error": error,
                   "result": content}
        self.results.rows.append((file, line, 0, self._seq(), task_id, self.reader.trace_id(task_id), ORCHESTRATOR,
                                  t.get("name"), self.reader.span(task_id, "result", call_id),
                                  self.reader.span(task_id, "call", call_id), t.get("latency_s"), payload))


def _records(file: SourceFile, max_line_bytes: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of every line of a small file read whole (Irregular: anything the
    line reader, jsonlines.json_lines, would skip, refuse or word)."""
    if (file.plain_bytes or file.stored_bytes) > MAX_FILE_BYTES:
        raise Irregular("a large file")
    with file.open() as stream:
        data = stream.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise Irregular("a large file")
    lines = data.split(b"\n")
    if not lines[-1]:
        lines.pop()  # the final newline's
    for number, line in enumerate(lines, 1):
        if len(line) >= max_line_bytes or not line.strip():
            raise Irregular("a long or blank line")
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise Irregular("invalid JSON") from None
        if record.__class__ is not dict:
            raise Irregular("not an object")
        yield number, record
