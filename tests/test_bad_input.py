"""Bad input never half-lands: one clear message naming file, line and field; exit 2; store unchanged."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from helpers import llm_call, native_lines, store_version, tracewh, write_native, write_zip

import tracewh as tw

GOOD = [llm_call("r1", 1, prompt_tokens=10), llm_call("r1", 2, prompt_tokens=20)]


def _lines(*records: bytes) -> bytes:
    return native_lines([]) + b"".join(r + b"\n" for r in records)


OK_LINE = b'{"run_id":"r9","benchmark":"custom","kind":"llm_call"}'


def truncated_zip(tmp: Path) -> Path:
    data = write_zip(tmp / "full.zip", {"a.jsonl": native_lines(GOOD * 50)}).read_bytes()
    (tmp / "bad.zip").write_bytes(data[: len(data) // 2])
    return tmp / "bad.zip"


def corrupt_zip_member(tmp: Path) -> Path:
    path = tmp / "bad.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("a.jsonl", native_lines(GOOD * 50))
    data = bytearray(path.read_bytes())
    data[200] ^= 0xFF  # inside the member's data: the CRC no longer matches
    path.write_bytes(bytes(data))
    return path


def future_zip_version(tmp: Path) -> Path:
    """A zip whose directory asks for a zip version zipfile does not read (found by the input fuzz)."""
    data = bytearray(write_zip(tmp / "bad.zip", {"a.jsonl": native_lines(GOOD)}).read_bytes())
    entry = data.find(b"PK\x01\x02")  # the central directory entry: version made by, version needed
    data[entry + 5] = data[entry + 6] = 230
    (tmp / "bad.zip").write_bytes(bytes(data))
    return tmp / "bad.zip"


def escaping_zip(tmp: Path) -> Path:
    return write_zip(tmp / "bad.zip", {"ok.jsonl": native_lines(GOOD), "../../etc/evil.jsonl": native_lines(GOOD)})


def zip_bomb(tmp: Path) -> Path:
    return write_zip(tmp / "bad.zip", {"bomb.jsonl": b"\n" * (20 << 20)})


def second_file_bad(tmp: Path) -> Path:
    # The first file is fine; the second's error must still keep the first out of the store.
    return write_zip(tmp / "bad.zip", {"a.jsonl": native_lines(GOOD), "b.jsonl": _lines(OK_LINE, b"{oops")})


def written(data: bytes):
    return lambda tmp: (tmp / "bad.jsonl").write_bytes(data) and tmp / "bad.jsonl"


CASES = {
    "truncated zip": (truncated_zip, ["bad.zip", "not a readable zip"]),
    "corrupt zip member": (corrupt_zip_member, ["bad.zip!a.jsonl", "corrupt"]),
    "zip version not supported": (future_zip_version, ["bad.zip", "not a readable zip", "zip file version"]),
    "entry escaping the archive": (escaping_zip, ["../../etc/evil.jsonl", "escapes the archive"]),
    "absurd compression ratio": (zip_bomb, ["bomb.jsonl", "compression ratio"]),
    "invalid JSON": (written(_lines(OK_LINE, b'{"run_id": "r1",')), ["bad.jsonl, line 3", "invalid JSON"]),
    "not an object": (written(_lines(b"[1, 2]")), ["bad.jsonl, line 2", "expected a JSON object"]),
    "wrong type": (written(_lines(b'{"run_id":"r1","benchmark":"custom","kind":"llm_call","prompt_tokens":"12"}')),
                   ["bad.jsonl, line 2, field 'prompt_tokens'", "expected an integer"]),
    "unknown kind": (written(_lines(b'{"run_id":"r1","benchmark":"custom","kind":"llm_cal"}')),
                     ["bad.jsonl, line 2, field 'kind'", "unknown kind 'llm_cal'"]),
    "missing required field": (written(_lines(OK_LINE, b'{"benchmark":"custom","kind":"llm_call"}')),
                               ["bad.jsonl, line 3, field 'run_id'", "required field is missing"]),
    "unknown field": (written(_lines(b'{"run_id":"r1","benchmark":"custom","kind":"score","scroe":1}')),
                      ["bad.jsonl, line 2, field 'scroe'", "unknown field"]),
    "bad time": (written(_lines(b'{"run_id":"r1","benchmark":"custom","kind":"score","ts":"yesterday"}')),
                 ["bad.jsonl, line 2, field 'ts'", "ISO-8601"]),
    "non-UTF-8": (written(_lines(b'{"run_id":"r\xff1","benchmark":"custom","kind":"score"}')),
                  ["bad.jsonl, line 2", "not valid UTF-8"]),
    "bad error in a later file": (second_file_bad, ["bad.zip!b.jsonl, line 3", "invalid JSON"]),
    "unrecognised format": (written(b'{"hello": "world"}\n'), ["bad.jsonl, line 1", "no adapter recognises"]),
    "missing header": (written(b'{"format": "tracewh-events/1"}\n{"format": "tracewh-events/1"}\n'),
                       ["bad.jsonl, line 2, field 'format'", "header line in the middle"]),
}


@pytest.fixture
def seeded_store(tmp_path: Path) -> Path:
    """A store with one good batch, so 'unchanged' is a version that must not move."""
    wh = tmp_path / "wh"
    tracewh("ingest", write_native(tmp_path / "good.jsonl", GOOD), "-w", wh, check=True)
    return wh


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_refused_cleanly(tmp_path, seeded_store, case):
    make, expected = CASES[case]
    bad = make(tmp_path)
    before = store_version(seeded_store)

    result = tracewh("ingest", bad, "-w", seeded_store)

    assert result.code == 2, result.err
    message = " ".join(result.err.split())  # rich may wrap long lines
    for text in expected:
        assert text in message
    assert "Traceback" not in result.err
    assert store_version(seeded_store) == before
    assert tw.open(seeded_store).sql("select count(*) from events").fetchall() == [(2,)]
    assert list((seeded_store / "_staging").iterdir()) == []


def test_oversized_record_is_refused(tmp_path, seeded_store):
    big = write_native(tmp_path / "big.jsonl", [llm_call("r1", 1, payload={"text": "x" * (3 << 20)})])
    result = tracewh("ingest", big, "-w", seeded_store, "--max-line-mb", "1")
    assert result.code == 2 and "big.jsonl, line 2" in result.err and "longer than" in result.err
    assert store_version(seeded_store) == 1


def test_missing_path_and_unsupported_file(tmp_path, seeded_store):
    assert tracewh("ingest", tmp_path / "nope.zip", "-w", seeded_store).code == 2
    (tmp_path / "notes.txt").write_text("hi")
    result = tracewh("ingest", tmp_path / "notes.txt", "-w", seeded_store)
    assert result.code == 2 and "not a supported input" in result.err


# -- found by the type-swap input fuzz (tests/test_input_fuzz.py): once internal errors (exit 1) --------

ECB_RESULT = b'{"timestamp": "2026-04-06T09:00:00Z", "task_id": "task_1", "task_passed": 1}\n'


@pytest.mark.parametrize("members, expected", [
    ({"config/agent_specs.json": b'[{"name": "hr_service_specialist"}, "it_service_desk_l1"]'},
     ["bad.zip!config/agent_specs.json, field '[1]'", "expected an agent spec (a JSON object), got str"]),
    ({"config/agent_specs.json": b'[1.5]'}, ["agent_specs.json, field '[0]'", "got float"]),
    ({"config/agent_specs.json": b'[{"name": "a", "delegate_to": "b"}]'},
     ["agent_specs.json, field '[0].delegate_to'", "expected a list of agent names"]),
    ({"agent_toolsets.json": b'{"hr_service_specialist": "domain.mcp.hr"}'},
     ["agent_toolsets.json, field 'hr_service_specialist'", "expected a list of tool group names"]),
    ({"mcp_auth_by_agent.json": b'{"hr_service_specialist": 1.5}'},
     ["mcp_auth_by_agent.json, field 'hr_service_specialist'", "expected an object of server: token, got float"]),
    ({"result-x.jsonl": b'{"timestamp": "2026-04-06T09:00:00Z", "task_id": "task_1", "task_passed": 1, '
                        b'"judge": {"task": {"subtasks": [{"agents": 1.5}]}}}\n'},
     ["bad.zip!result-x.jsonl, line 1, field 'judge.task.subtasks[0].agents'", "expected list, got float"]),
    ({"traj/traj-x.jsonl": b'{"task_id": "task_1", "timestamp": "2026-04-06T09:00:00Z", '
                           b'"batch_entry": {"canonical_diff": {"servers": {"hr": "broken"}}}}\n'},
     ["bad.zip!traj/traj-x.jsonl, line 1, field 'batch_entry.canonical_diff.servers.hr'", "expected an object, got str"]),
    ({"traj/traj-x.jsonl": b'{"task_id": "task_1", "timestamp": "2026-04-06T09:00:00Z", "batch_entry": '
                           b'{"initial_state_snapshot": {"servers": {"hr": 1.5}}, "final_state_snapshot": {}}}\n'},
     ["field 'batch_entry.initial_state_snapshot.servers.hr'", "expected an object, got float"]),
])
def test_entcollabbench_entries_of_the_wrong_type_are_refused(tmp_path, seeded_store, members, expected):
    bad = write_zip(tmp_path / "bad.zip", {"result-x.jsonl": ECB_RESULT} | members)
    before = store_version(seeded_store)
    result = tracewh("ingest", bad, "-w", seeded_store, "--attr", "model=m")
    assert result.code == 2 and len(result.err.strip().splitlines()) == 1, result.err
    message = " ".join(result.err.split())
    assert all(text in message for text in expected), message
    assert store_version(seeded_store) == before


def test_an_eval_member_nested_100000_deep_is_refused(tmp_path, seeded_store):
    """Python's JSON decoder (the fallback for Inspect's bare NaN) raised RecursionError."""
    source = Path(__file__).parent / "data" / "inspect" / "popularity.eval"
    bad = tmp_path / "deep.eval"
    with zipfile.ZipFile(source) as z, zipfile.ZipFile(bad, "w", zipfile.ZIP_STORED) as out:
        for info in z.infolist():
            deep = info.filename == "samples/9_epoch_1.json"
            out.writestr(info.filename, b"[" * 100_000 + b"]" * 100_000 if deep else z.read(info))
    before = store_version(seeded_store)
    result = tracewh("ingest", bad, "-w", seeded_store)
    assert result.code == 2 and len(result.err.strip().splitlines()) == 1, result.err
    assert "deep.eval!samples/9_epoch_1.json: invalid JSON: arrays or objects nested too deep" in " ".join(result.err.split())
    assert store_version(seeded_store) == before


@pytest.mark.parametrize("key, value, problem", [
    ("function", "get_user_details", "expected object, got str"),
    ("id", "DEEP", "expected string"),  # a 10,000-deep array: ijson reads it, turning it into text recursed
])
def test_a_tau_bench_tool_call_of_the_wrong_shape_is_refused(tmp_path, seeded_store, key, value, problem):
    episodes = json.loads((Path(__file__).parent / "data" / "taubench" / "gpt-4o-airline.json").read_text())[:1]
    message, k = next((m, k) for m in episodes[0]["traj"] for k, c in enumerate(m.get("tool_calls") or []))
    message["tool_calls"][k][key] = value
    bad = tmp_path / "gpt-4o-airline.json"
    bad.write_text(json.dumps(episodes).replace('"DEEP"', "[" * 10_000 + "]" * 10_000))
    before = store_version(seeded_store)
    result = tracewh("ingest", bad, "-w", seeded_store)
    assert result.code == 2 and len(result.err.strip().splitlines()) == 1, result.err
    where = f"traj[{episodes[0]['traj'].index(message)}].tool_calls[{k}].{key}"
    assert f"field '{where}'" in " ".join(result.err.split()) and problem in result.err
    assert store_version(seeded_store) == before


def test_a_tau_bench_reward_info_that_is_no_object_is_refused(tmp_path, seeded_store):
    episodes = json.loads((Path(__file__).parent / "data" / "taubench" / "gpt-4o-airline.json").read_text())[:1]
    episodes[0]["info"]["reward_info"]["info"] = [1, 2]
    bad = tmp_path / "gpt-4o-airline.json"
    bad.write_text(json.dumps(episodes))
    result = tracewh("ingest", bad, "-w", seeded_store)
    assert result.code == 2 and "(array item 1), field 'info.reward_info.info': expected object, got list" in result.err


def _inspect_json_log(tmp_path: Path, change) -> Path:
    log = json.loads((Path(__file__).parent / "data" / "inspect" / "log_tool_call_error.json").read_text())
    change(log)
    bad = tmp_path / "log_tool_call_error.json"
    bad.write_text(json.dumps(log).replace('"DEEP"', "[" * 10_000 + "]" * 10_000))
    return bad


@pytest.mark.parametrize("change, expected", [
    # found by the type-swap fuzz: a RecursionError, an orjson TypeError and an unhashable dict
    (lambda log: log["stats"].__setitem__("started_at", "DEEP"), "nests too deep to read"),
    (lambda log: log["eval"]["revision"].__setitem__("type", 2**70), "cannot be stored as JSON"),
])
def test_an_inspect_header_of_the_wrong_shape_is_refused(tmp_path, seeded_store, change, expected):
    bad = _inspect_json_log(tmp_path, change)
    before = store_version(seeded_store)
    result = tracewh("ingest", bad, "-w", seeded_store)
    assert result.code == 2 and len(result.err.strip().splitlines()) == 1, result.err
    assert "log_tool_call_error.json" in result.err and expected in result.err, result.err
    assert store_version(seeded_store) == before


def test_an_inspect_metric_whose_scorer_is_an_object_is_still_read(tmp_path):
    def scorer_object(log):
        log["results"]["scores"][0]["scorer"] = {"swapped": "in"}

    wh = tmp_path / "wh"
    result = tracewh("ingest", _inspect_json_log(tmp_path, scorer_object), "-w", wh)
    assert result.code == 0, result.err
    scorers = [s for (s,) in tw.open(wh).sql("select distinct scorer from inspect_metrics").fetchall()]
    assert any('{"swapped":"in"}' in (s or "") for s in scorers), scorers
