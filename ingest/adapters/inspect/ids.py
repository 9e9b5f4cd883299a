"""Whose an event is: the ids and order every event of a run gets, and a sample's fields on top.

events.py (a log's header and metrics), sample.py (a sample's scores, errors and finish) and
transcript.py (a transcript's calls, delegations and state changes) all stamp their events
through these. They live below all three so that imports go one way: events.py -> sample.py
-> transcript.py -> ids.py.
"""

from __future__ import annotations

from typing import Any

from ....errors import BadInputError
from ....schema import event_id
from ...context import AdapterContext
from .content import Content
from .records import Log

BENCHMARK = "inspect"


def sample_key(raw_sample: dict[str, Any], where: str) -> tuple[str, int]:
    """(id as text, epoch): Inspect's key of a sample; int 1 and "1" are the same sample."""
    sample_id, epoch = raw_sample.get("id"), raw_sample.get("epoch", 1)
    if isinstance(sample_id, bool) or not isinstance(sample_id, (int, str)) or sample_id == "":
        raise BadInputError(where, f"expected a sample id (an integer or a string), got {sample_id!r}", field="id")
    if isinstance(epoch, bool) or not isinstance(epoch, int):
        raise BadInputError(where, f"expected an integer, got {epoch!r}", field="epoch")
    return str(sample_id), epoch


class RunIds:
    """One run (`inspect:<eval_id>`): its model, its event ids and the seq of its events."""

    def __init__(self, first: Log, ctx: AdapterContext):
        self.key, self.ctx = first.run_key, ctx
        self.run_id = f"inspect:{self.key}"
        self.model = first.fields.sub("eval").req("model", "string")
        self.seq = 0

    def key_id(self, *parts: object) -> str:
        return event_id(BENCHMARK, self.key, *parts)

    def emit(self, kind: str, key: tuple, **fields: Any) -> dict[str, Any]:
        self.seq += 1
        return {"event_id": self.key_id(*key), "run_id": self.run_id, "benchmark": BENCHMARK, "kind": kind,
                "seq": self.seq, **fields}


class SampleIds:
    """One sample x epoch of a run: its key, trace and span ids, its content (attachments and
    message pool), and what every one of its events carries."""

    def __init__(self, run: RunIds, raw_sample: dict[str, Any], where: str):
        self.run, self.prices = run, run.ctx.prices
        self.id, self.epoch = sample_key(raw_sample, where)
        self.content = Content(raw_sample)
        self.root = self.span("sample")
        self.trace_id = run.key_id(self.id, self.epoch)

    def span(self, *parts: object) -> str:
        return self.run.key_id(self.id, self.epoch, "span", *parts)[:16]

    def emit(self, kind: str, key: tuple, payload: dict[str, Any], **fields: Any) -> dict[str, Any]:
        return self.run.emit(kind, (self.id, self.epoch, *key), task_id=self.id, subtask=f"epoch-{self.epoch}",
                             trace_id=self.trace_id, payload={"epoch": self.epoch, **payload}, **fields)
