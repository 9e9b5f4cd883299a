"""The bulk conversion (ingest/bulk.py) against the per-event one (rows.convert): whenever bulk
accepts a chunk, every event of it converts one by one to exactly the same row; whatever one
event refuses, bulk declines (the pipeline then converts one by one, for the precise error)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracewh.errors import BadInputError
from tracewh.ingest.bulk import Irregular, convert_batch
from tracewh.ingest.rows import Where, convert
from tracewh.schema import ARROW_SCHEMA, KIND_NAMES

BASE = {"event_id": "e", "batch_id": "b", "run_id": "r", "benchmark": "custom", "kind": "llm_call", "seq": 1}

ZONES = st.sampled_from([timezone.utc, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8)), None])
WHEN = st.datetimes(min_value=datetime(1600, 1, 1), max_value=datetime(2400, 1, 1), timezones=ZONES)


@st.composite
def iso_texts(draw) -> str:
    """Times as harnesses write them, and spellings near them that Python or pyarrow read differently."""
    when = draw(WHEN)
    text = when.isoformat(timespec=draw(st.sampled_from(["seconds", "milliseconds", "microseconds", "minutes"])))
    variant = draw(st.sampled_from(["as is", "Z", "space", "2 digits", "9 digits", "bad day", "hour 24", "date"]))
    if variant == "Z" and text.endswith("+00:00"):
        text = text[:-6] + "Z"
    elif variant == "space":
        text = text.replace("T", " ")
    elif variant == "2 digits" and "." in text:
        text = text[:text.index(".") + 3] + text[text.index(".") + 4:]
    elif variant == "9 digits" and "." in text:
        text = text[:text.index(".") + 1] + "123456789" + text[text.index(".") + 4:].lstrip("0123456789")
    elif variant == "bad day":
        text = text[:5] + "02-30" + text[10:]
    elif variant == "hour 24":
        text = text[:11] + "24" + text[13:]
    elif variant == "date":
        text = text[:10]
    return text


STRINGS = st.one_of(st.text(max_size=8), st.just(""), st.text(min_size=513, max_size=520))
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-2**64, 2**64), st.floats(allow_nan=False, allow_infinity=True), STRINGS,
    st.just({"b": 1, "a": [1.5, None]}), st.just([1, 2]), st.just(b"bytes"), WHEN, iso_texts(),
    st.floats(0, 32503680000), st.integers(0, 4_000_000_000))
FIELDS = st.sampled_from(["seq", "ts", "task_id", "model", "schema_version", "prompt_tokens", "cost_usd", "score",
                          "payload", "kind", "benchmark", "run_id", "event_id", "span_id", "nonsense"])


@st.composite
def events(draw) -> list[dict[str, Any]]:
    rows = []
    for i in range(draw(st.integers(1, 6))):
        event = dict(BASE, event_id=f"e{i}", kind=draw(st.sampled_from(sorted(KIND_NAMES))))
        event["ts"] = draw(st.one_of(WHEN, iso_texts(), st.floats(0, 4e9), st.none()))
        event["payload"] = draw(st.one_of(st.none(), st.dictionaries(st.text(max_size=3), st.integers(), max_size=3)))
        for field, value in draw(st.lists(st.tuples(FIELDS, VALUES), max_size=2)):
            event[field] = value
        rows.append(event)
    return rows


def one_by_one(batch: list[dict[str, Any]]) -> pa.RecordBatch | None:
    try:
        return pa.RecordBatch.from_pylist([convert(e, Where("f", i)) for i, e in enumerate(batch)], schema=ARROW_SCHEMA)
    except (BadInputError, pa.ArrowException, OverflowError):
        return None


def same_or_declined(batch: list[dict[str, Any]]) -> None:
    try:
        bulk = convert_batch(batch)
    except Irregular:
        return
    expected = one_by_one(batch)
    assert expected is not None, "bulk accepted a chunk convert() refuses"
    assert bulk.equals(expected), (bulk.to_pylist(), expected.to_pylist())


@settings(max_examples=400, deadline=None)
@given(batch=events())
def test_bulk_accepts_only_what_converts_one_by_one_and_gives_the_same_rows(batch):
    same_or_declined(batch)


@settings(max_examples=500, deadline=None)
@given(times=st.lists(st.one_of(iso_texts(), WHEN, st.floats(0, 32503680000), st.integers(0, 4_000_000_000)),
                      min_size=1, max_size=5))
def test_times_bulk_accepts_are_the_instants_convert_gives(times):
    same_or_declined([dict(BASE, ts=t) for t in times])


def test_regular_events_take_the_bulk_path():
    batch = [dict(BASE, seq=i, ts=t, prompt_tokens=3, cost_usd=1, score=0.5, payload={"z": 1, "a": {"c": 2, "b": 1}})
             for i, t in enumerate(["2026-05-01T10:00:01.250Z", "2026-05-01T12:00:00+02:00", 1777629605.5,
                                    datetime(2026, 5, 1, tzinfo=timezone.utc), None])]
    assert convert_batch(batch).equals(one_by_one(batch))


@pytest.mark.parametrize("field, value", [("seq", True), ("seq", 1.0), ("cost_usd", float("inf")), ("kind", "nope"),
                                          ("benchmark", "Bad Name"), ("run_id", ""), ("payload", [1]),
                                          ("ts", "yesterday"), ("ts", -1), ("schema_version", 2), ("extra", 1),
                                          ("task_id", "x" * 513), ("model", 5)])
def test_anything_convert_refuses_is_declined(field, value):
    with pytest.raises(Irregular):
        convert_batch([BASE, dict(BASE, **{field: value})])
