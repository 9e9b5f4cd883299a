"""Faults and abuse: fuzzed inputs, torn archives, killed writers, concurrent writers, full disks.

The only outcomes allowed anywhere: success, or a clean tracewh error with the store exactly
as it was. CI runs small counts; TRACEWH_HEAVY=1 runs the full counts of docs/reliability.md.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from helpers import llm_call, native_lines, store_version, tracewh, write_zip
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracewh as tw
from tracewh.demo.decisionbench_archive import run_members
from tracewh.errors import BadInputError, TracewhError
from tracewh.ingest.sources import Limits

HEAVY = os.environ.get("TRACEWH_HEAVY") == "1"
FUZZ_EXAMPLES = 200 if HEAVY else 12
TRUNCATION_STEP = 1 if HEAVY else 9
CRASH_TRIALS = 30 if HEAVY else 8
pytestmark = pytest.mark.heavy

RELAY = {"sample_id": "json1", "sample_type": "json", "response_id": "6650c0ffee0000000000abcd", "model_name": "gpt-5.4",
         "timestamp": "2026-04-14_18-01-31", "target_state_id": "basic_state", "initial_state_id": "basic_state",
         "evaluation": {"score": 0.9}, "state_chain": ["e1", "basic_state"], "rid_chain": ["r0", "r1"],
         "round_trip_num": 1, "round_trip_direction": "backward", "llm_latency": 1.0, "prompt_tokens": 10,
         "completion_tokens": 5, "total_usd": 0.0, "distractor_included": True}
QA = {"sample_id": "json1", "sample_type": "json", "model_name": "m", "direction": "forward", "response_id": "f1",
      "edit_prompt": "Sort", "run_idx": 0, "evaluation": {}, "llm_latency": 1.0, "prompt_tokens": 3, "completion_tokens": 2}
DATASET = {"sample_id": "json1", "sample_type": "json", "states": [{"state_id": "basic_state", "prompts": [
    {"target_state": "e1", "prompt": "Sort"}]}], "files": {"basic_state/a.json": "{}", "distractor_context/n.md": "x"}}
TAU = {"task_id": 3, "reward": 1.0, "trial": 0, "info": {"source": "user", "user_cost": 0.01},
       "traj": [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "get_user_details", "arguments": "{\"user_id\": \"x\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "name": "get_user_details", "content": "{}"}]}
BFCL = {"id": "multi_turn_base_0", "result": [[[{"ls": "{}"}]]], "input_token_count": [[10]], "output_token_count": [[2]],
        "latency": [[0.5]], "inference_log": []}
NATIVE = llm_call("r1", 1, prompt_tokens=10, payload={"provider": "openai"})
DCB_COMPLETION = {"type": "completion", "step": 1, "model": "m", "usage": {"prompt_tokens": 5, "completion_tokens": 1},
                  "finish_reason": "stop", "latency_s": 1.0, "cost_usd": 0.001, "content": "ok", "tool_calls": []}


def jsonl(records: list[Any]) -> bytes:
    return b"".join(json.dumps(r, allow_nan=True).encode() + b"\n" for r in records)


# adapter -> (file name, records, how to serialise them)
SEEDS = {
    "native": ("events.jsonl", [NATIVE, llm_call("r1", 2)], lambda rs: native_lines([]) + jsonl(rs)),
    "delegate52-relay": ("results_json_gpt-5.4.jsonl", [RELAY], jsonl),
    "delegate52-qa": ("logs/edit_testing/json1_m.jsonl", [QA], jsonl),
    "delegate52-dataset": ("delegate52.jsonl", [DATASET], jsonl),
    "tau-bench": ("m-airline.json", [TAU], lambda rs: json.dumps(rs, allow_nan=True).encode()),
    "bfcl": ("result/m/BFCL_v4_multi_turn_base_result.json", [BFCL], jsonl),
    "decisionbench-run": ("traces/gaia/t1.jsonl", [DCB_COMPLETION], jsonl),
}


def archive_for(adapter: str, records: list[Any], path: Path) -> Path:
    name, _, serialise = SEEDS[adapter]
    members = {name: serialise(records)}
    if adapter == "decisionbench-run":
        members |= {k: v.encode() for k, v in run_members(
            {"run_id": "x", "suite": "gaia", "split": "stage1", "condition": "blind", "orchestrator": "m"},
            [{"task_id": "gaia/t1", "quality": 1.0}], {}).items()}
    return write_zip(path, members)


ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20), st.just("x" * 300_000), st.just("\ud800 lone surrogate"), st.just("nul\u0000 rtl\u202e e\u0301 🧪"),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    st.just(json.loads("[" * 300 + "]" * 300)),
)


@st.composite
def mutated(draw: st.DrawFn, records: list[dict]) -> list[Any]:
    records = json.loads(json.dumps(records))
    target = draw(st.integers(0, len(records) - 1))
    record = records[target]
    keys = list(record)
    action = draw(st.sampled_from(["drop", "retype", "reorder", "duplicate", "nest", "not_an_object"]))
    if action == "drop" and keys:
        record.pop(draw(st.sampled_from(keys)))
    elif action == "retype" and keys:
        record[draw(st.sampled_from(keys))] = draw(ODD_VALUES)
    elif action == "reorder":
        records[target] = dict(draw(st.permutations(list(record.items()))))
    elif action == "duplicate" and keys:
        records.insert(target, dict(record))
    elif action == "nest" and keys:
        key = draw(st.sampled_from(keys))
        record[key] = {"deep": record[key], "more": [record.get(k) for k in keys]}
    elif action == "not_an_object":
        records[target] = draw(st.sampled_from([[], "text", 3, None]))
    return records


def outcome_is_clean(wh: Path, path: Path) -> str:
    """Ingest `path`: success, or a tracewh error that left the store as it was."""
    store = tw.open(wh)
    before = (store.version, store.sql("select count(*) from events").fetchall())
    try:
        tw.open(wh).ingest([path])
    except TracewhError:
        after = tw.open(wh)
        assert (after.version, after.sql("select count(*) from events").fetchall()) == before, "partial commit"
        assert not [p for p in (wh / "_staging").iterdir()], "staging left behind"
        return "refused"
    return "ingested"


@pytest.fixture(scope="module")
def base_store(tmp_path_factory) -> Path:
    wh = tmp_path_factory.mktemp("fuzz") / "wh"
    tw.open(wh).ingest([write_zip(wh.parent / "seed.zip", {"seed.jsonl": native_lines([llm_call("seed", 1)])})])
    return wh


@pytest.mark.parametrize("adapter", SEEDS)
def test_fuzzed_inputs_succeed_or_fail_cleanly(adapter, base_store, tmp_path_factory):
    name, records, _ = SEEDS[adapter]
    assert outcome_is_clean(base_store, archive_for(adapter, records, tmp_path_factory.mktemp("s") / "valid.zip")) == \
        "ingested", "the unmutated seed must be valid"
    seen: dict[str, int] = {}

    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
    @given(bad=mutated(records))
    def fuzz(bad):
        path = archive_for(adapter, bad, tmp_path_factory.mktemp("f") / "fuzz.zip")
        result = outcome_is_clean(base_store, path)
        seen[result] = seen.get(result, 0) + 1

    fuzz()
    assert sum(seen.values()) == FUZZ_EXAMPLES


def test_truncation_at_every_byte_boundary(base_store, tmp_path):
    whole = write_zip(tmp_path / "whole.zip", {"e.jsonl": native_lines([llm_call("t", i) for i in range(3)])}).read_bytes()
    outcomes = {}
    for cut in range(0, len(whole), TRUNCATION_STEP):
        (tmp_path / "cut.zip").write_bytes(whole[:cut])
        outcomes[cut] = outcome_is_clean(base_store, tmp_path / "cut.zip")
    assert set(outcomes.values()) == {"refused"}
    plain = native_lines([llm_call("p", i) for i in range(3)])
    for cut in range(0, len(plain), TRUNCATION_STEP * 4):
        (tmp_path / f"cut{cut}.jsonl").write_bytes(plain[:cut])
        outcome_is_clean(base_store, tmp_path / f"cut{cut}.jsonl")  # a torn last line is skipped; rest commits


def _big_archive(path: Path, n: int) -> Path:
    return write_zip(path, {"events.jsonl": native_lines(
        [llm_call(f"run{i % 7}", i, prompt_tokens=i, payload={"text": "lorem ipsum " * 20}) for i in range(n)])})


@pytest.mark.parametrize("events", [5_000, 40_000])
def test_a_killed_ingest_leaves_the_store_before_or_after(tmp_path, events):
    """kill -9 at random instants, across archive sizes: the store is exactly before or after."""
    base = tmp_path / "base"
    tracewh("ingest", write_zip(tmp_path / "seed.zip", {"s.jsonl": native_lines([llm_call("seed", 1)])}), "-w", base,
            check=True)
    archive = _big_archive(tmp_path / "big.zip", events)
    started = time.perf_counter()
    tracewh("ingest", archive, "-w", tmp_path / "timing", check=True)
    full = time.perf_counter() - started
    rng, outcomes = random.Random(events), []
    for trial in range(CRASH_TRIALS):
        wh = tmp_path / f"trial{trial}"
        shutil.copytree(base, wh)
        proc = subprocess.Popen([sys.executable, "-m", "tracewh", "ingest", str(archive), "-w", str(wh)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.1, full * 1.05))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        state = (store_version(wh), tw.open(wh).sql("select count(*), count(distinct event_id) from events").fetchall()[0])
        assert state in [(1, (1, 1)), (2, (events + 1, events + 1))], f"trial {trial}: {state}"
        outcomes.append(state[0])
        if trial % 4 == 0:  # doctor cleans up, and the ingest then completes
            tracewh("doctor", "-w", wh, check=True)
            tracewh("ingest", archive, "-w", wh, check=True)
            assert tw.open(wh).sql("select count(*) from events").fetchall() == [(events + 1,)]
    assert outcomes.count(1) >= 2, "too few kills landed before the commit to test anything"


def test_four_writers_forty_archives_and_consistent_readers(tmp_path):
    archives = [write_zip(tmp_path / f"a{i:02d}.zip", {"e.jsonl": native_lines([llm_call(f"r{i}", j) for j in range(50)])})
                for i in range(40)]
    wh = tmp_path / "wh"
    tracewh("ingest", archives[0], "-w", wh, check=True)  # the table exists before readers start
    reads, errors, stop = [], [], threading.Event()

    def reader():
        while not stop.is_set():
            try:
                version = store_version(wh)
                count = tw.open(wh, version=version).sql("select count(*) from events").fetchall()[0][0]
                committed = sum(b.events for b in tw.open(wh).log() if b.version <= version)
                reads.append((version, count == committed, count, committed))
            except Exception as e:  # noqa: BLE001
                errors.append(repr(e))

    threads = [threading.Thread(target=reader) for _ in range(2)]
    [t.start() for t in threads]
    writers = []
    for w in range(4):
        order = random.Random(w).sample(archives, len(archives))
        writers.append(subprocess.Popen([sys.executable, "-m", "tracewh", "ingest", *map(str, order), "-w", str(wh)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    codes = [p.wait(timeout=600) for p in writers]
    stop.set()
    [t.join() for t in threads]
    assert codes == [0, 0, 0, 0], [p.stderr.read()[-500:] for p in writers]
    assert errors == [] and reads and all(ok for _, ok, *_ in reads), [r for r in reads if not r[1]][:5]
    log = tw.open(wh).log()
    assert len(log) == 40 and len({b.key for b in log}) == 40  # every archive exactly once
    assert tw.open(wh).sql("select count(*), count(distinct event_id) from events").fetchall() == [(2000, 2000)]


def _mount_tmpfs(path: Path, size: str) -> bool:
    path.mkdir()
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True).returncode == 0


def test_disk_full_is_a_clean_error_and_changes_nothing(tmp_path, monkeypatch):
    root = tmp_path / "small"
    real = _mount_tmpfs(root, "2m")
    try:
        wh = root / "wh"
        tw.open(wh).ingest([write_zip(tmp_path / "seed.zip", {"s.jsonl": native_lines([llm_call("seed", 1)])})])
        noise = random.Random(0)
        big = write_zip(tmp_path / "big.zip", {"e.jsonl": native_lines(
            [llm_call("big", i, payload={"blob": noise.randbytes(128).hex()}) for i in range(12_000)])})
        if not real:  # no tmpfs here: fail the commit's writes instead
            import tracewh.warehouse.store as store_module

            def full(*args, **kwargs):
                raise OSError(28, "No space left on device")

            monkeypatch.setattr(store_module, "write_data_files", full)
        with pytest.raises(TracewhError, match="No space left on device.*nothing was committed"):
            tw.open(wh).ingest([big])
        assert store_version(wh) == 1 and tw.open(wh).sql("select count(*) from events").fetchall() == [(1,)]
        tw.open(wh).store.doctor()
        assert tw.open(wh).sql("select count(*) from events").fetchall() == [(1,)]
    finally:
        if real:
            subprocess.run(["umount", str(root)], check=True)


def test_an_unreadable_file_is_a_clean_error(tmp_path, monkeypatch):
    import tracewh.ingest.sources as sources

    path = tmp_path / "locked.jsonl"
    path.write_bytes(native_lines([llm_call("r", 1)]))

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(sources, "open", denied, raising=False)
    with pytest.raises(BadInputError, match="locked.jsonl: cannot be read: Permission denied"):
        tw.open(tmp_path / "wh").ingest([path])


def _zip_with(path: Path, entries: list[tuple[zipfile.ZipInfo | str, bytes]]) -> Path:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about duplicate names, which is the point
        with zipfile.ZipFile(path, "w") as z:
            for info, data in entries:
                z.writestr(info, data)
    return path


def _symlink_entry() -> zipfile.ZipInfo:
    info = zipfile.ZipInfo("link.jsonl")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


@pytest.mark.parametrize("entries, message", [
    ([("/etc/evil.jsonl", b"{}")], "escapes the archive"),
    ([("ok/../../evil.jsonl", b"{}")], "escapes the archive"),
    ([("..\\evil.jsonl", b"{}")], "escapes the archive"),
    ([("C:/evil.jsonl", b"{}")], "escapes the archive"),
    ([(_symlink_entry(), b"/etc/passwd")], "symbolic link"),
    ([("a.jsonl", native_lines([])), ("a.jsonl", native_lines([]))], "two entries of this name"),
])
def test_zip_safety(tmp_path, entries, message):
    with pytest.raises(BadInputError, match=message):
        tw.open(tmp_path / "wh").ingest([_zip_with(tmp_path / "x.zip", entries)])
    assert store_version(tmp_path / "wh") is None


def test_total_size_limit_is_configurable(tmp_path):
    archive = write_zip(tmp_path / "x.zip", {f"{i}.jsonl": native_lines([llm_call("r", i)]) for i in range(5)})
    with pytest.raises(BadInputError, match="more than the 300-byte limit for one archive"):
        tw.open(tmp_path / "wh").ingest([archive], limits=Limits(max_total_bytes=300))
    assert tw.open(tmp_path / "wh").ingest([archive]).added == 5


def test_a_killed_ingest_with_workers_leaves_the_store_before_or_after(tmp_path):
    """kill -9 of an ingest whose workers stage a folder of runs: the workers die with it, the
    store is exactly before or after, and the next ingest completes."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from generate import write_decisionbench

    (folder,) = write_decisionbench(tmp_path / "raw", 0.01, seed=6)  # runs of 200 tasks: a group each
    started = time.perf_counter()
    tracewh("ingest", "--workers", "2", folder, "-w", tmp_path / "timing", check=True)
    full = time.perf_counter() - started
    total = tw.open(tmp_path / "timing").sql("select count(*) from events").fetchall()[0][0]
    rng = random.Random(6)
    for trial in range(CRASH_TRIALS // 2):
        wh = tmp_path / f"trial{trial}"
        proc = subprocess.Popen([sys.executable, "-m", "tracewh", "ingest", "--workers", "2", str(folder), "-w", str(wh)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, full * 1.05))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 5
        while _processes_naming(wh) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _processes_naming(wh), f"trial {trial}: a worker outlived its ingest"
        if (wh / "events").exists():
            assert tw.open(wh).sql("select count(*) from events").fetchall()[0][0] in (0, total)
        tracewh("ingest", folder, "-w", wh, check=True)
        assert tw.open(wh).sql("select count(*) from events").fetchall() == [(total,)]
        assert not any((wh / "_staging").iterdir())


def _processes_naming(path: Path) -> list[int]:
    """Live processes whose command line names `path` (an ingest's workers repeat their parent's)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(path).encode() in (proc / "cmdline").read_bytes():
                state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(int(proc.name))
        except OSError:
            pass
    return found
