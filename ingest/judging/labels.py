"""`tracewh label`: people's labels as `judgment` events (rater_kind human).

A label names its rubric, target, annotator and either a label or a score, with an optional
note. A later label by the same annotator on the same target and rubric supersedes the
current one (its event id, read from the `labels` view); giving the current label again
(same label or score, same note) writes nothing. Labels are checked against the rubric's
answer space: the rubric file's when one is given, else the label set or scale the rubric's
LLM judgments were asked with (stored in their payload); with neither, a label need only be
non-empty text and a score a finite number. Every label of a call is checked before any is
written, and all are committed as one batch.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ...errors import BadInputError
from ...schema.native import dumps_event, header
from .events import label_event
from .rubric import Rubric, load_rubric

if TYPE_CHECKING:
    from .access import WarehouseAccess

FILE_COLUMNS = ("target_id", "rubric", "label", "score", "annotator", "note")


@dataclass
class LabelInput:
    rubric: Any
    target_id: Any
    annotator: Any
    label: Any = None
    score: Any = None
    note: Any = None
    file: str = "arguments"  # where it came from, for error messages
    line: int | None = None


@dataclass
class LabelReport:
    added: int = 0  # new labels (first ones and corrections)
    superseded: int = 0  # of which, corrections of an earlier label
    unchanged: int = 0  # the annotator's current label already: nothing written


@dataclass
class Checked:
    rubric: str
    target_id: str
    annotator: str
    label: str | None
    value: float | None
    note: str | None


def read_label_file(path: Path, rubric: str | None = None, annotator: str | None = None) -> list[LabelInput]:
    """Labels from a CSV (with a header row) or JSON Lines file; `rubric` and `annotator` fill
    rows that leave them out."""
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise BadInputError(name, f"cannot be read: {getattr(e, 'strerror', None) or e}") from None
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        rows = [(i, {k: (v if v != "" else None) for k, v in row.items()}) for i, row in enumerate(reader, start=2)]
        columns = reader.fieldnames or []
    elif path.suffix.lower() in (".jsonl", ".ndjson"):
        rows = []
        for i, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError as e:
                raise BadInputError(name, f"not JSON: {e}", line=i) from None
            if not isinstance(record, dict):
                raise BadInputError(name, "a label is a JSON object", line=i)
            rows.append((i, record))
        columns = sorted({k for _, r in rows for k in r})
    else:
        raise BadInputError(name, "a label file is .csv (with a header row) or .jsonl")
    if unknown := [c for c in columns if c not in FILE_COLUMNS]:
        raise BadInputError(name, f"unknown column; a label file has {', '.join(FILE_COLUMNS)}", field=unknown[0])
    if None in columns or (rows and any(None in r for _, r in rows)):
        raise BadInputError(name, "a row has more values than the header has columns")
    return [LabelInput(r.get("rubric") or rubric, r.get("target_id"), r.get("annotator") or annotator,
                       r.get("label"), r.get("score"), r.get("note"), name, i) for i, r in rows]


def record_labels(wh: WarehouseAccess, items: list[LabelInput | dict[str, Any]],
                  rubric_file: str | Path | None = None) -> LabelReport:
    """Check every label, then commit the new ones as one batch. A dict is read as a LabelInput
    (rubric, target_id, annotator, label or score, note)."""
    report, events = label_events(wh, items, rubric_file)
    commit_label_events(wh, events)
    return report


def label_events(wh: WarehouseAccess, items: list[LabelInput | dict[str, Any]], rubric_file: str | Path | None = None,
                 pending: dict[tuple[str, str, str], dict[str, Any]] | None = None) -> tuple[LabelReport, list[dict[str, Any]]]:
    """Check every label and give the events that record the new ones, committing nothing.
    `pending`: labels accepted and not yet committed (the service's spool), by (rubric, target_id,
    annotator), each as `labels` has it (label, value, note, event_id): they count as current, so a
    correction supersedes the label just given, not the one before it."""
    items = [LabelInput(**item, file="Warehouse.label") if isinstance(item, dict) else item for item in items]
    rubric = load_rubric(rubric_file) if rubric_file is not None else None
    spaces: dict[str, tuple[tuple[str, ...] | None, tuple[float, float] | None]] = {}
    checked = []
    for item in items:
        one = _basic(item)
        if one.rubric not in spaces:
            spaces[one.rubric] = _answer_space(wh, one.rubric, rubric, item)
        checked.append(_in_space(one, *spaces[one.rubric], item))
    report, events = LabelReport(), []
    current = _current_labels(wh, {c.rubric for c in checked}) | (pending or {})
    targets = _target_fields(wh, {(c.rubric, c.target_id) for c in checked})
    for c in checked:
        now = current.get((c.rubric, c.target_id, c.annotator))
        if now is not None and (now["label"], now["value"], now["note"]) == (c.label, c.value, c.note):
            report.unchanged += 1
            continue
        target = targets.get((c.rubric, c.target_id), {"target_id": c.target_id})
        event = label_event(c.rubric, target, c.annotator, c.label, c.value, c.note,
                            now["event_id"] if now else None, rubric if rubric and rubric.name == c.rubric else None)
        events.append(event)
        current[(c.rubric, c.target_id, c.annotator)] = current_of(event)
        report.added += 1
        report.superseded += now is not None
    return report, events


def current_of(event: dict[str, Any]) -> dict[str, Any]:
    """A label event as the `labels` view's current label (what a later label is compared with)."""
    payload = event["payload"]
    return {"label": payload.get("label"), "value": payload.get("value"), "note": payload.get("note"),
            "event_id": event["event_id"]}


def commit_label_events(wh: WarehouseAccess, events: list[dict[str, Any]]) -> None:
    """Commit label events as one batch."""
    if events:
        commit_label_lines(wh, b"".join(dumps_event(e) for e in events))


def commit_label_lines(wh: WarehouseAccess, lines: bytes) -> None:
    """Commit label events, as native JSON lines, as one batch (an event already stored adds
    nothing: ids derive from the label and what it supersedes)."""
    from ..pipeline import ingest_memory

    ingest_memory(wh.store, "tracewh label", "labels.jsonl", header(generator="tracewh label") + lines)
    wh.close()


def _basic(item: LabelInput) -> Checked:
    """Names present, exactly one of label and score, a label non-empty, a score a finite number."""
    def text(value: Any, field: str, required: bool = True) -> str | None:
        if value is None or (isinstance(value, str) and not value.strip()):
            if required:
                raise BadInputError(item.file, "is required", line=item.line, field=field)
            return None
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise BadInputError(item.file, "must be text", line=item.line, field=field)
        return str(value).strip()

    rubric, target_id, annotator = text(item.rubric, "rubric"), text(item.target_id, "target_id"), text(item.annotator, "annotator")
    note = text(item.note, "note", required=False)
    if (item.label is None) == (item.score is None):
        raise BadInputError(item.file, "give either a label or a score, not both or neither", line=item.line,
                            field="label")
    if item.label is not None:
        return Checked(rubric, target_id, annotator, text(item.label, "label"), None, note)
    return Checked(rubric, target_id, annotator, None, _finite(item), note)


def _finite(item: LabelInput) -> float:
    value = item.score
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number):
        raise BadInputError(item.file, f"{value!r} is not a finite number", line=item.line, field="score")
    return number


def _answer_space(wh: WarehouseAccess, name: str, rubric: Rubric | None,
                  item: LabelInput) -> tuple[tuple[str, ...] | None, tuple[float, float] | None]:
    """The label set or scale a label of rubric `name` must fit: the rubric file's, else the
    one its latest LLM judgment was asked with; (None, None) when neither is known."""
    if rubric is not None:
        if rubric.name != name:
            raise BadInputError(item.file, f"rubric {name!r} is not the rubric file's ({rubric.name!r}, {rubric.file})",
                                line=item.line, field="rubric")
        return rubric.labels, rubric.scale
    if not wh.exists():
        return None, None
    row = wh.sql("select payload -> '$.label_set', payload -> '$.scale' from judgments where rubric = $1 "
                 "and rater_kind = 'llm' and ((payload -> '$.label_set') is not null or (payload -> '$.scale') is not null) "
                 "order by ts desc, seq desc limit 1", [name]).fetchall()
    if not row:  # no LLM judgment yet: the review queue's (`tracewh queue add` keeps the rubric's answer space)
        row = wh.sql("select label_set, scale from review_queue where rubric = $1 order by queued_ts desc limit 1",
                     [name]).fetchall()
    if not row:
        return None, None
    labels, scale = (orjson.loads(v) if v is not None else None for v in row[0])
    return (tuple(labels) if labels else None), (tuple(scale) if scale else None)


def _in_space(c: Checked, labels: tuple[str, ...] | None, scale: tuple[float, float] | None,
              item: LabelInput) -> Checked:
    if labels is not None:
        if c.label is None:
            raise BadInputError(item.file, f"rubric {c.rubric!r} takes a label ({', '.join(labels)}), not a score",
                                line=item.line, field="label")
        match = next((x for x in labels if x.casefold() == c.label.casefold()), None)
        if match is None:
            raise BadInputError(item.file, f"{c.label!r} is not in rubric {c.rubric!r}'s label set ({', '.join(labels)})",
                                line=item.line, field="label")
        return Checked(**{**c.__dict__, "label": match})
    if scale is not None:
        if c.value is None:
            raise BadInputError(item.file, f"rubric {c.rubric!r} takes a score from {scale[0]:g} to {scale[1]:g}, "
                                "not a label", line=item.line, field="score")
        if not scale[0] <= c.value <= scale[1]:
            raise BadInputError(item.file, f"{c.value:g} is off rubric {c.rubric!r}'s scale "
                                f"({scale[0]:g} to {scale[1]:g})", line=item.line, field="score")
    return c


def _current_labels(wh: WarehouseAccess, rubrics: set[str]) -> dict[tuple[str, str, str], dict[str, Any]]:
    if not wh.exists() or not rubrics:
        return {}
    rows = wh.sql("select rubric, target_id, rater, label, value, note, event_id from labels "
                  "where rater_kind = 'human' and rubric in (select unnest($1::varchar[]))", [sorted(rubrics)]).fetchall()
    return {(r, t, a): {"label": label, "value": value, "note": note, "event_id": e}
            for r, t, a, label, value, note, e in rows}


def _target_fields(wh: WarehouseAccess, targets: set[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
    """The target's run, task, model and reference, from the rubric's latest judgment of it (if any)."""
    if not wh.exists() or not targets:
        return {}
    rows = wh.sql("select rubric, target_id, target_run_id, target_task_id, target_model, reference "
                  "from judgments j join (select unnest($1::varchar[]) as r, unnest($2::varchar[]) as t) wanted "
                  "on j.rubric = wanted.r and j.target_id = wanted.t where rater_kind = 'llm' "
                  "qualify row_number() over (partition by rubric, target_id order by ts desc, seq desc) = 1",
                  [[r for r, _ in targets], [t for _, t in targets]]).fetchall()
    found = {(r, t): {"target_id": t, "run_id": run, "task_id": task, "model": model, "reference": ref}
             for r, t, run, task, model, ref in rows}
    return _queued_target_fields(wh, targets - found.keys()) | found


def _queued_target_fields(wh: WarehouseAccess, targets: set[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
    """Targets no LLM judge has judged: their run, task, model and reference as their review queue has them."""
    if not targets:
        return {}
    rows = wh.sql("select q.rubric, q.target_id, q.run_id, q.task_id, q.model, q.reference "
                  "from review_queue q join (select unnest($1::varchar[]) as r, unnest($2::varchar[]) as t) wanted "
                  "on q.rubric = wanted.r and q.target_id = wanted.t",
                  [[r for r, _ in targets], [t for _, t in targets]]).fetchall()
    return {(r, t): {"target_id": t, "run_id": run, "task_id": task, "model": model,
                     "reference": orjson.loads(ref) if ref is not None else None}
            for r, t, run, task, model, ref in rows}
