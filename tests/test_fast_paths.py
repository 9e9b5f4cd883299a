"""The fast ingest paths store exactly what the per-record path stores: the same inputs ingested
both ways give the same events, column by column (ids, values, payload text, times, defaults
that depend on line numbers), and the same errors for bad input."""

from __future__ import annotations

import gzip
import json
import random
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from hardening import count
from helpers import llm_call, native_lines

import tracewh as tw
from tracewh.errors import BadInputError
from tracewh.ingest import bulk, stage
from tracewh.ingest.adapters import native
from tracewh.ingest.adapters.decisionbench import columns as run_columns
from tracewh.ingest.adapters.native import columns

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from generate import GENERATORS  # noqa: E402


@pytest.fixture(scope="module")
def benchmark_runs(tmp_path_factory) -> list[Path]:
    """Every benchmark format at a small scale, and the native export of all of it."""
    tmp = tmp_path_factory.mktemp("runs")
    raw = {name: gen(tmp / "raw", 0.004, seed=5) for name, gen in GENERATORS.items()}
    paths = [p for ps in raw.values() for p in ps]
    tw.open(tmp / "wh").ingest(paths, check=False)
    tw.open(tmp / "wh").export_events(tmp / "export.jsonl")
    return [*paths, tmp / "export.jsonl"]


def _irregular(*_: Any, **__: Any) -> Any:
    raise bulk.Irregular("the per-record path, for the comparison")


def per_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every chunk and every block declined: events converted one at a time, native lines read one by one."""
    monkeypatch.setattr(bulk, "convert_batch", _irregular)
    monkeypatch.setattr(columns, "_columns", _irregular)
    monkeypatch.setattr(run_columns.ChunkReader, "read", _irregular)


TAKEN = {"blocks": 0, "chunks": 0, "runs": 0}  # how often the fast paths decided (not declined), in fast mode


def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bulk paths also for small files and small chunks, blocks small enough that a file spans
    many, and chunks of DecisionBench files small enough that a run spans several."""
    monkeypatch.setattr(native, "BULK_MIN_BYTES", 0)
    monkeypatch.setattr(stage, "BULK_MIN_EVENTS", 0)
    monkeypatch.setattr(columns, "BLOCK_BYTES", 4096)
    monkeypatch.setattr(run_columns, "CHUNK_BYTES", 8192)
    monkeypatch.setattr(run_columns.ChunkReader, "read", _counted(run_columns.ChunkReader.read, "runs"))
    monkeypatch.setattr(columns, "_columns", _counted(columns._columns, "blocks"))
    monkeypatch.setattr(bulk, "convert_batch", _counted(bulk.convert_batch, "chunks"))


def _counted(function: Any, counter: str) -> Any:
    def counted(*args: Any) -> Any:
        result = function(*args)
        TAKEN[counter] += 1
        return result
    return counted


def stored(wh: Path) -> list[tuple]:
    # run_attrs from --attr carry the time of the ingest: everything else must match to the bit
    return tw.open(wh).sql("select * exclude (ts), case when source = '--attr' then null else ts end "
                           "from events_raw order by event_id").fetchall()


class Refused(str):
    """An ingest's error text, as outcomes_both_ways gives it."""


def outcomes_both_ways(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, paths: list[Path],
                       **options: Any) -> list[list[tuple] | Refused]:
    """The fast path's and the per-record path's outcome of ingesting `paths`: the events
    stored, or the error's text."""
    TAKEN.update(blocks=0, chunks=0, runs=0)
    outcomes: list[list[tuple] | Refused] = []
    for name, mode in (("fast", fast), ("per-record", per_record)):
        with monkeypatch.context() as m:
            mode(m)
            try:
                tw.open(tmp_path / name).ingest(paths, workers=1, **options)  # the patches hold in this process only
                outcomes.append(stored(tmp_path / name))
            except BadInputError as e:
                outcomes.append(Refused(e))
    return outcomes


def both_ways(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, paths: list[Path], **options: Any) -> list[tuple]:
    """The events both paths store, which must be the same."""
    fast_events, per_record_events = outcomes_both_ways(tmp_path, monkeypatch, paths, **options)
    assert not isinstance(fast_events, Refused) and fast_events == per_record_events
    return fast_events


def test_every_benchmark_format_stores_the_same_events(tmp_path, monkeypatch, benchmark_runs):
    events = both_ways(tmp_path, monkeypatch, benchmark_runs, check=False)
    assert len(events) > 5000 and TAKEN["blocks"] > 10 and TAKEN["chunks"] > 10 and TAKEN["runs"] > 10


def test_decisionbench_columns_the_pipeline_declines_are_read_again_record_by_record(tmp_path, monkeypatch,
                                                                                   benchmark_runs):
    """The pipeline's envelope check declining every DecisionBench batch (as a task id over 512
    characters would): those events come again as dicts, numbered on from where each chunk began."""
    check = bulk.check_envelope

    def declining(arrays: dict) -> None:
        if arrays["benchmark"][0].as_py() == "decisionbench":
            raise bulk.Irregular("declined, for the test")
        check(arrays)

    (runs,) = [p for p in benchmark_runs if p.name == "decisionbench"]
    expected = both_ways(tmp_path / "columns", monkeypatch, [runs])
    monkeypatch.setattr(bulk, "check_envelope", declining)
    assert both_ways(tmp_path / "declined", monkeypatch, [runs]) == expected and TAKEN["runs"] > 10


def test_attributes_and_the_gate_give_the_same_events(tmp_path, monkeypatch, benchmark_runs):
    export = benchmark_runs[-1]
    both_ways(tmp_path, monkeypatch, [export], attrs={"model": "filled-in", "condition": "x"})


def native_variants(tmp_path: Path) -> Path:
    """Native lines as people and tools write them: fields left out (ids, seq, source), times in
    every form convert() reads, payloads with unsorted keys and escapes, nulls, blank lines."""
    events = [llm_call("r1", i, ts=ts, prompt_tokens=i, cost_usd=i / 3, latency_s=1, finish_reason="stop",
                       payload={"z": "é\n\"q\"", "a": [1.5, None, {"y": 2, "x": 1e-7}], "m": "\u2028"})
              for i, ts in enumerate(["2026-05-01T10:00:01.250Z", "2026-05-01T12:00:00+02:00", "2026-05-01 10:00:00",
                                      "2026-05-01T10:00:00.123456789Z", 1777629605.5, 1777629605, None])]
    events += [{"run_id": "r2", "benchmark": "custom", "kind": "score", "score": 0.5, "task_id": "t\\1",
                "event_id": "given", "batch_id": "mine", "source": "elsewhere:9", "model": None},
               {"run_id": "r2", "benchmark": "custom", "kind": "run_started", "seq": 5, "ts": "2026-05-01"}]
    text = native_lines(events).replace(b'"seq":3,', b"")  # seq left out: the line number
    lines = text.split(b"\n")
    text = b"\n".join(lines[:4] + [b"", b"   "] + lines[4:])  # blank lines shift later line numbers
    path = tmp_path / "variants.jsonl"
    path.write_bytes(text * 1)
    return path


def test_native_lines_in_every_form_store_the_same_events(tmp_path, monkeypatch):
    source = native_variants(tmp_path)
    events = both_ways(tmp_path, monkeypatch, [source], attrs={"model": "m"}, check=False)
    assert len(events) == 9 + 2  # and the run_attrs of the two runs


def test_a_gzipped_native_file_in_many_blocks(tmp_path, monkeypatch):
    events = [llm_call(f"r{i % 7}", i, ts=f"2026-05-01T10:{i % 60:02d}:00Z", prompt_tokens=i, model="m",
                       payload={"text": "x" * (i % 300), "i": i}) for i in range(3000)]
    path = tmp_path / "many.jsonl.gz"
    path.write_bytes(gzip.compress(native_lines(events)))
    assert len(both_ways(tmp_path, monkeypatch, [path])) == 3000 and TAKEN["blocks"] > 10


BAD_NATIVE = {
    "a field of the wrong type": ('"prompt_tokens":5', '"prompt_tokens":"5"'),
    "a float for an integer": ('"prompt_tokens":5', '"prompt_tokens":5.0'),
    "a trailing comma": ('"prompt_tokens":5', '"prompt_tokens":5,'),
    "NaN": ('"prompt_tokens":5', '"prompt_tokens":NaN'),
    "Infinity in a payload": ('"prompt_tokens":5', '"prompt_tokens":5,"payload":{"a":[1,-Infinity]}'),
    "nan for a time": ('"prompt_tokens":5', '"prompt_tokens":5,"ts":nan'),
    "inf for a name": ('"prompt_tokens":5', '"prompt_tokens":5,"model":inf'),
    "an unknown field": ('"prompt_tokens":5', '"prompt_tokens":5,"tokens":5'),
    "a null id": ('"prompt_tokens":5', '"prompt_tokens":5,"event_id":null'),
    "an unknown kind": ('"kind":"llm_call"', '"kind":"llm_cal"'),
    "a bad time": ('"prompt_tokens":5', '"prompt_tokens":5,"ts":"2026-02-30T00:00:00Z"'),
    "a big integer": ('"prompt_tokens":5', '"prompt_tokens":9223372036854775808'),
    "not JSON": ('"prompt_tokens":5', '"prompt_tokens":'),
}


@pytest.mark.parametrize("case", sorted(BAD_NATIVE) + ["a trailing comma before the closing brace"])
def test_bad_native_lines_give_the_per_record_error(tmp_path, monkeypatch, case):
    old, new = BAD_NATIVE.get(case, ("}", ",}"))
    lines = native_lines([llm_call("r", i, prompt_tokens=5) for i in range(200)]).split(b"\n")
    if case not in BAD_NATIVE:  # DuckDB's JSON parser reads {"a":1,} as {"a":1}; orjson refuses it
        lines[150] = lines[150][:-1] + b",}"
    lines[150] = lines[150].replace(old.encode(), new.encode(), 1)
    assert lines[150] != native_lines([llm_call("r", 149, prompt_tokens=5)]).split(b"\n")[1]
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join(lines))
    fast_error, per_record_error = outcomes_both_ways(tmp_path, monkeypatch, [path], check=False)
    assert isinstance(fast_error, Refused) and fast_error == per_record_error and "line 151" in fast_error


@pytest.mark.parametrize("odd", ['"prompt_tokens":5,"prompt_tokens":6', '"prompt_tokens":5,"payload":{"a":1,"a":2}',
                                 '"prompt_tokens":5,"payload":{"t":"NaN, ]"}', '"prompt_tokens":5,"model":null',
                                 '"prompt_tokens":5, "model":"m"'])
def test_odd_but_valid_lines_store_what_the_per_record_path_stores(tmp_path, monkeypatch, odd):
    lines = native_lines([llm_call("r", i, prompt_tokens=5) for i in range(200)]).split(b"\n")
    lines[150] = lines[150].replace(b'"prompt_tokens":5', odd.encode(), 1)
    path = tmp_path / "odd.jsonl"
    path.write_bytes(b"\n".join(lines))
    assert len(both_ways(tmp_path, monkeypatch, [path])) == 200


def test_a_block_is_read_without_the_per_line_lax_check_only_when_no_line_can_need_it():
    """A trailing comma, which DuckDB's JSON parser takes and orjson refuses (LAX), sends a block through
    the check. NaN and Infinity need not: the value checks refuse them (BAD_NATIVE)."""
    from tracewh.ingest.adapters.native.columns import _may_be_lax

    assert not _may_be_lax(b'{"a":[1,2],"b":{"c":"x,y"}}\n{"d":1}\n')
    assert not _may_be_lax(b'{"a":NaN,"b":-Infinity}\n')
    for lax in (b'{"a":[1,2,]}\n', b'{"a":1,}\n', b'{"a":1,\n}\n', b'{"a":[1, 2]}\n',
                b'{"t":"a comma, then a space, in a string is only a false alarm"}\n'):
        assert _may_be_lax(lax), lax


# ------------------------------------------------------------------------- fuzz
# Byte-level damage to one line: what DuckDB's parser and orjson may read differently (numbers
# JSON does not have, trailing commas, spaces, repeated or unknown keys, nulls, cut text).
MUTATIONS = [
    lambda line, rng: re.sub(rb":([0-9]+)", lambda m: b":" + rng.choice(
        [b"NaN", b"-Infinity", b"nan", b"inf", b"1e400", m.group(1) + b".0", b'"' + m.group(1) + b'"', b"true"]), line, 1),
    lambda line, rng: line[:-1] + b",}",
    lambda line, rng: line.replace(b"]", b",]", 1),
    lambda line, rng: line.replace(b",", b", ", rng.randint(1, 3)),
    lambda line, rng: line.replace(b"{", b'{"kind":"score",', 1),
    lambda line, rng: line.replace(b"{", b'{"tokens":1,', 1),
    lambda line, rng: re.sub(rb'("model":)"[^"]*"', rb"\1null", line, 1),
    lambda line, rng: line[:rng.randrange(1, len(line))],
    lambda line, rng: (lambda at: line[:at] + line[at + 1:])(rng.randrange(len(line))),
    lambda line, rng: (lambda at: line[:at] + bytes([rng.randrange(256)]) + line[at:])(rng.randrange(len(line))),
]


@pytest.mark.parametrize("seed", range(count(ci=24, heavy=600)))
def test_damaged_native_lines_give_what_the_per_record_path_gives(tmp_path, monkeypatch, seed):
    """Random damage to a few lines: the fast path stores the same events, or refuses with the
    same error, as the per-record reader; both against orjson's reading of each line."""
    rng = random.Random(seed)
    events = [llm_call("r", i, ts=f"2026-05-01T10:00:{i % 60:02d}Z", prompt_tokens=i, model="m", cost_usd=i / 7,
                       payload={"text": "x" * (i % 50), "steps": [i, i + 1], "nested": {"b": 1, "a": None}})
              for i in range(300)]
    lines = native_lines(events).split(b"\n")
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(1, len(lines) - 1)
        lines[at] = rng.choice(MUTATIONS)(lines[at], rng)
    path = tmp_path / "damaged.jsonl"
    path.write_bytes(b"\n".join(lines))
    fast_outcome, per_record_outcome = outcomes_both_ways(tmp_path, monkeypatch, [path], check=False)
    assert fast_outcome == per_record_outcome


# DecisionBench records damaged as JSON: fields of other types, left out or null, nested ones too.
ODD_VALUES = [None, True, 1.5, 7, -1, 2**64, "x", "", "2026-02-30T00:00:00Z", [], {}, [{"name": 5}]]


def _damaged_record(line: bytes, rng: random.Random) -> bytes:
    if len(line) < 2 or not line.startswith(b"{"):  # damaged already
        return line
    if rng.random() < 0.15:
        return rng.choice([b"", b"   ", b"{", line[:rng.randrange(1, len(line))], b"[1]"])
    try:
        record = json.loads(line)
    except ValueError:  # cut already
        return line
    target = record
    nested = [k for k, v in record.items()
              if isinstance(v, dict) or (isinstance(v, list) and v and isinstance(v[0], dict))]
    if nested and rng.random() < 0.4:
        value = record[rng.choice(nested)]
        target = value if isinstance(value, dict) else value[0]
    if not target:
        return line
    key = rng.choice(sorted(target))
    if rng.random() < 0.2:
        del target[key]
    else:
        target[key] = rng.choice(ODD_VALUES)
    return json.dumps(record).encode()


@pytest.mark.parametrize("seed", range(count(ci=24, heavy=400)))
def test_damaged_decisionbench_runs_give_what_the_per_record_path_gives(tmp_path, monkeypatch, benchmark_runs, seed):
    """A run's records and traces with a few damaged lines: both paths store the same events, or
    refuse with the same error (file, line and field)."""
    rng = random.Random(seed)
    (runs,) = [p for p in benchmark_runs if p.name == "decisionbench"]
    run = tmp_path / "run"
    shutil.copytree(sorted(runs.iterdir())[seed % 3], run)
    files = sorted(p for p in run.rglob("*.jsonl"))
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(files)
        lines = path.read_bytes().split(b"\n")
        at = rng.randrange(len(lines) - 1)  # the last is the empty text after the final newline
        lines[at] = _damaged_record(lines[at], rng)
        path.write_bytes(b"\n".join(lines))
    fast_outcome, per_record_outcome = outcomes_both_ways(tmp_path, monkeypatch, [run], check=False)
    assert fast_outcome == per_record_outcome
