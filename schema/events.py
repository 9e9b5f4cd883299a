"""The event contract: the envelope every event shares, its typed columns, and the kinds.

Column names here are a public contract (DESIGN.md): users, docs, views and other
tools query them by name. Add columns; never rename or retype one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

SCHEMA_VERSION = 1
NATIVE_FORMAT = "tracewh-events/1"

# Delta partition columns: a view over one benchmark or one kind reads only its folders.
PARTITION_COLUMNS = ("benchmark", "kind")
# What a benchmark may be called (and every kind is called): it names a partition folder.
BENCHMARK_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")

TIMESTAMP_TYPE = "timestamp[us, tz=UTC]"


@dataclass(frozen=True)
class Column:
    name: str
    arrow: str  # the Arrow type, as Arrow spells it (pyarrow is imported only when the type is used)
    doc: str
    required: bool = False  # must be non-null in every stored event

    @property
    def type(self) -> Any:
        return _arrow_types()[self.arrow]


COLUMNS: tuple[Column, ...] = (
    Column("event_id", "string", "Deterministic id: same source content gives the same id.", True),
    Column("batch_id", "string", "The ingest batch (one archive, file or directory) that first stored the event.", True),
    Column("run_id", "string", "One harness invocation: one model x condition x task set.", True),
    Column("benchmark", "string", "Benchmark family, lowercase (delegate52, entcollabbench, decisionbench, tau, bfcl, custom, ...). Partition column.", True),
    Column("kind", "string", "What happened; one of the kinds below. Partition column.", True),
    Column("seq", "int64", "Order of the event within its run.", True),
    Column("ts", TIMESTAMP_TYPE, "When it happened (UTC, microseconds); null when the source has no time."),
    Column("task_id", "string", "Task within the run."),
    Column("subtask", "string", "Subtask or step within the task."),
    Column("agent", "string", "Acting agent or role."),
    Column("model", "string", "Model that acted (as the source names it)."),
    Column("trace_id", "string", "OpenTelemetry-style trace id: all spans of one task share it."),
    Column("span_id", "string", "This event's span."),
    Column("parent_span_id", "string", "The enclosing span (e.g. the delegation a peer call belongs to)."),
    Column("schema_version", "int32", "Version of this contract the event was written under.", True),
    Column("prompt_tokens", "int64", "Input tokens of an LLM call."),
    Column("completion_tokens", "int64", "Output tokens of an LLM call (including reasoning where the provider counts it so)."),
    Column("reasoning_tokens", "int64", "Reasoning tokens of an LLM call."),
    Column("cached_tokens", "int64", "Prompt tokens served from cache."),
    Column("cost_usd", "double", "Cost in US dollars."),
    Column("latency_s", "double", "Wall time in seconds."),
    Column("finish_reason", "string", "Why the model stopped (stop, length, tool_calls, ...)."),
    Column("tool_name", "string", "Tool called or answered."),
    Column("score", "double", "A score in [0, 1] (score and judgment events); Inspect scores keep the scorer's own scale."),
    Column("payload", "string", "Everything else, as a JSON object (text)."),
    Column("supersedes", "string", "event_id of an earlier event this one corrects; views read the latest."),
    Column("source", "string", "Where the event came from: file inside the batch and line."),
)

COLUMN_NAMES = tuple(c.name for c in COLUMNS)



@cache
def _arrow_types() -> dict[str, Any]:
    import pyarrow as pa

    return {"string": pa.string(), "int64": pa.int64(), "int32": pa.int32(), "double": pa.float64(),
            TIMESTAMP_TYPE: pa.timestamp("us", tz="UTC")}


DUCKDB_TYPES = {"string": "VARCHAR", "int64": "BIGINT", "int32": "INTEGER", "double": "DOUBLE",
                TIMESTAMP_TYPE: "TIMESTAMP WITH TIME ZONE"}


def duckdb_type(column: Column) -> str:
    """The column's type as DuckDB reads it from the Parquet files."""
    return DUCKDB_TYPES[column.arrow]


@cache
def arrow_schema() -> Any:
    """The events table's Arrow schema (pyarrow is loaded here, not when the schema module is)."""
    import pyarrow as pa

    return pa.schema([pa.field(c.name, c.type, nullable=not c.required) for c in COLUMNS])


def __getattr__(name: str) -> Any:
    if name == "ARROW_SCHEMA":
        return arrow_schema()
    if name == "TIMESTAMP":
        return _arrow_types()[TIMESTAMP_TYPE]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Kind:
    name: str
    doc: str
    payload: dict[str, str]  # conventional payload keys the views read


KINDS: tuple[Kind, ...] = (
    Kind("run_started", "A run began.", {"attrs": "run attributes declared by the source"}),
    Kind("run_attrs", "Attributes attached to a run, by the source or by `ingest --attr key=value`; the `runs` view merges them, later batches winning.", {"*": "one key per attribute"}),
    Kind("run_finished", "A run ended.", {"status": "ok | error | aborted"}),
    Kind("task_started", "A task began.", {"instruction": "task text, when captured"}),
    Kind("task_finished", "A task ended.", {"status": "ok | error | timeout | skipped"}),
    Kind("llm_call", "One request to a model.", {"provider": "openai, anthropic, ...", "request_id": "provider request id", "tool_calls": "tools the model asked for", "error": "error type/status when the call failed"}),
    Kind("tool_call", "An agent called a tool.", {"arguments": "tool arguments (object)", "server": "MCP server or tool host"}),
    Kind("tool_result", "A tool answered.", {"status": "ok | error", "result": "result text or object"}),
    Kind("delegation", "An agent handed work to another agent or model.", {"to_agent": "receiving agent", "to_model": "receiving model", "depth": "delegation depth (1 = first level)", "status": "ok | error | refused", "message": "what was asked"}),
    Kind("message", "A message between agents, users or models.", {"role": "user | assistant | system | tool", "text": "content, when captured"}),
    Kind("state_snapshot", "A snapshot of environment state (a document, a database table).", {"service": "service/database", "table": "table name"}),
    Kind("state_diff", "One changed row/field between two states.", {"service": "service/database", "table": "table", "key": "row key", "op": "insert | delete | update", "field": "field", "before": "old value", "after": "new value"}),
    Kind("score", "A metric value for a step, task or run (`score` column in [0, 1]; Inspect scores keep their scale).", {"metric": "what was scored", "error": "evaluator error, if any"}),
    Kind("judgment", "A judge's verdict (`score` column: 1 pass, 0 fail).", {"judge": "judge id", "verdict": "pass | fail | label", "votes": "individual votes"}),
    Kind("decision", "A decision an agent made (approve/reject, model chosen, ...).", {"label": "the decision", "rationale": "why"}),
    Kind("registry", "Reference data shipped with a run: model pool, permission maps, prices.", {"name": "which registry", "entries": "its content"}),
    Kind("error", "A failure the harness recorded that belongs to no other kind.", {"type": "error type", "message": "text"}),
    Kind("span", "An OpenTelemetry span of no other kind (a chain, retriever, embedding, plain span): kept so every span tree stays whole.", {"name": "span name", "operation": "gen_ai.operation.name or openinference.span.kind, as sent", "attributes": "every span attribute", "status": "ok | error"}),
)

KIND_NAMES = frozenset(k.name for k in KINDS)


def event_id(*parts: object) -> str:
    """A deterministic 128-bit id from the parts that locate a record in its source."""
    text = "\x1f".join(map(str, parts))
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def line_event_ids(digest: str, names: Iterable[str], lines: Iterable[int], subs: Iterable[int]) -> list[str]:
    """event_id(digest, name, line, sub) of many events at once: the same text hashed, without a
    call and a join per event (0.5 µs an id against 0.85, a tenth of staging a DecisionBench run)."""
    blake2b = hashlib.blake2b
    return [blake2b(f"{digest}\x1f{name}\x1f{line}\x1f{sub}".encode(), digest_size=16).hexdigest()
            for name, line, sub in zip(names, lines, subs)]
