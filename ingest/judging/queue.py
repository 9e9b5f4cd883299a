"""Review queues: a rubric's targets put before people to label, each needing N reviews.

Queue membership is events, never a mutable table: one `registry` event (payload `name`
review_queue) per queued target, in benchmark `judging`, run `queue:<rubric>`. Its id derives
from the rubric, the target and the reviews wanted, so queueing a target twice stores one
item; queueing it again with another `--reviews` is a later event that the `review_queue`
view reads instead. Who labelled what, and whether an item is done, is the `labels` view's
business: `review_queue` counts the distinct annotators with a current label.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ...errors import BadInputError
from ...schema.native import dumps_event, header
from .events import BENCHMARK, _plain, answer_space, rubric_fields, stamp, target_fields
from .judge import _targets
from .rubric import load_rubric

if TYPE_CHECKING:
    from .access import WarehouseAccess

REGISTRY_NAME = "review_queue"
MAX_REVIEWS = 100
# Columns the page shows of a target besides its id, run, task and model (the rest of the
# target query's row; the rubric's prompt is not among them: reviewers see the target, not
# what a judge was asked).
SHOWN_ELSEWHERE = ("target_id", "run_id", "task_id", "model")


@dataclass
class QueueReport:
    rubric: str
    targets: int  # what the rubric's target query returned
    added: int  # items new to the queue (or with a changed number of reviews)
    already: int  # queued before, as they are: nothing written


def queue_run_id(rubric_name: str) -> str:
    return f"queue:{rubric_name}"


def add_to_queue(wh: WarehouseAccess, rubric_file: str | Path, reviews: int) -> QueueReport:
    """Queue every target of the rubric's target query, each wanting `reviews` labels by distinct
    annotators; targets already queued with the same number of reviews are left as they are."""
    rubric = load_rubric(rubric_file)
    if isinstance(reviews, bool) or not isinstance(reviews, int) or not 1 <= reviews <= MAX_REVIEWS:
        raise BadInputError(str(rubric_file), f"reviews must be a whole number from 1 to {MAX_REVIEWS}",
                            field="reviews")
    targets, _ = _targets(wh, rubric)
    events = [_item_event(rubric, target, position, reviews) for position, target in enumerate(targets)]
    stored = _stored_ids(wh, rubric.name)
    new = [e for e in events if e["event_id"] not in stored]
    if new:
        from ..pipeline import ingest_memory

        data = header(generator="tracewh queue") + b"".join(dumps_event(e) for e in new)
        ingest_memory(wh.store, f"tracewh queue add {rubric_file}", f"{queue_run_id(rubric.name)}.jsonl", data)
        wh.close()  # the next query sees the commit
    return QueueReport(rubric.name, len(targets), len(new), len(events) - len(new))


def _item_event(rubric: Any, target: dict[str, Any], position: int, reviews: int) -> dict[str, Any]:
    ts, seq = stamp()
    fields = target_fields(target)
    shown = {str(k): _plain(v) for k, v in target.items() if k not in SHOWN_ELSEWHERE and v is not None}
    payload = {"name": REGISTRY_NAME, "queue": rubric.name, **rubric_fields(rubric), **fields,
               "reviews": reviews, "position": position, "fields": shown, **answer_space(rubric)}
    identity = orjson.dumps([rubric.name, fields["target_id"], reviews]).decode()
    return {"event_id": hashlib.sha256(f"queue\0{identity}".encode()).hexdigest()[:32],
            "run_id": queue_run_id(rubric.name), "benchmark": BENCHMARK, "kind": "registry", "seq": seq, "ts": ts,
            "task_id": fields["target_id"], "payload": {k: v for k, v in payload.items() if v is not None}}


def _stored_ids(wh: WarehouseAccess, rubric_name: str) -> set[str]:
    if not wh.exists():
        return set()
    rows = wh.sql("select event_id from events where benchmark = $1 and kind = 'registry' and run_id = $2",
                  [BENCHMARK, queue_run_id(rubric_name)]).fetchall()
    return {r[0] for r in rows}


# The rubric's queue items, each with `raters`: its annotators, those of labels given and not yet
# committed ($3 targets, $4 annotators: the service's pending labels) counted in.
WITH_RATERS = ("with given as (select unnest($3::varchar[]) as target_id, unnest($4::varchar[]) as annotator), "
               "queued as (select q.*, list_distinct(list_concat(q.annotators, coalesce(g.annotators, []))) as raters "
               "from review_queue q left join (select target_id, list(annotator) as annotators from given "
               "group by target_id) g using (target_id) where q.rubric = $1) ")


def next_item(wh: WarehouseAccess, rubric: str, annotator: str, skipped: list[str] | tuple[str, ...] = (),
              pending: list[tuple[str, str]] | tuple[tuple[str, str], ...] = ()) -> dict[str, Any] | None:
    """The next item for this annotator: not done, not labelled by them, not skipped by them, in
    the queue's order (the target query's, then target_id); None when there is none. `pending`:
    (target_id, annotator) of labels given and not yet committed, counted as given."""
    if not wh.exists():
        return None
    rows = wh.sql(WITH_RATERS + "select * exclude (raters) from queued where len(raters) < reviews "
                  "and not list_contains(raters, $2) and not list_contains($5::varchar[], target_id) "
                  "order by position, target_id limit 1",
                  [rubric, annotator, *_given(pending), list(skipped)]).to_arrow_table().to_pylist()
    return rows[0] if rows else None


def annotator_counts(wh: WarehouseAccess, rubric: str, annotator: str,
                     pending: list[tuple[str, str]] | tuple[tuple[str, str], ...] = ()) -> dict[str, int]:
    """The queue's items and items done, and this annotator's items labelled and items left (not
    done, not labelled by them), with `pending` labels counted as given (`review_progress`'s numbers)."""
    if not wh.exists():
        return {"items": 0, "done": 0, "labelled": 0, "remaining": 0}
    rows = wh.sql(WITH_RATERS + "select count(*) as items, count(*) filter (where len(raters) >= reviews) as done, "
                  "count(*) filter (where list_contains(raters, $2)) as labelled, count(*) filter "
                  "(where len(raters) < reviews and not list_contains(raters, $2)) as remaining from queued",
                  [rubric, annotator, *_given(pending)]).to_arrow_table().to_pylist()
    return rows[0]


def _given(pending: list[tuple[str, str]] | tuple[tuple[str, str], ...]) -> list[list[str]]:
    return [[t for t, _ in pending], [a for _, a in pending]]


def queue_item(wh: WarehouseAccess, rubric: str, target_id: str) -> dict[str, Any] | None:
    """One item of the queue, done or not (to relabel it)."""
    if not wh.exists():
        return None
    rows = wh.sql("select * from review_queue where rubric = $1 and target_id = $2",
                  [rubric, target_id]).to_arrow_table().to_pylist()
    return rows[0] if rows else None


def progress(wh: WarehouseAccess, rubric: str | None = None) -> list[dict[str, Any]]:
    """Per queue and annotator: `review_progress`'s rows (every queue when `rubric` is None)."""
    if not wh.exists():
        return []
    return wh.sql("select * from review_progress where $1::varchar is null or rubric = $1 order by rubric, annotator "
                  "nulls first", [rubric]).to_arrow_table().to_pylist()
