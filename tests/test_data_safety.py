"""Data safety: committed data survives every path spelling, concurrent service ingests, killed
processes; files are no wider than they should be.

Each test is a regression for a way the store once broke its promise: a relative or spaced
store path made the second ingest delete the first batch's files; concurrent uploads raced
in the quality gate; a killed recorder lost calls that had already returned.
"""

from __future__ import annotations

import json
import os
import random
import signal
import stat
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from helpers import native_lines, serving, tracewh, write_native, write_zip

import tracewh as tw

TOKEN = "data-safety-token"
TESTS = Path(__file__).parent


def _events(benchmark: str, run: str, n: int, **fields) -> list[dict]:
    return [{"run_id": run, "benchmark": benchmark, "kind": "llm_call", "seq": i, "prompt_tokens": 10 + i, **fields}
            for i in range(n)]


def _parquet_files(store: Path) -> list[Path]:
    """The data files on disk (not the log's checkpoints)."""
    return sorted((store / "events").glob("benchmark=*/kind=*/*.parquet"))


# -- paths ---------------------------------------------------------------------------

SPELLINGS = {  # name -> (store path, given relative to the working directory?)
    "relative": ("wh", True),
    "relative with a space": ("my runs/wh", True),
    "space": ("my runs/wh", False),
    "accent": ("résultats été/wh", False),
    "hash": ("runs #1/wh", False),
    "question mark": ("what?/wh", False),
    "percent": ("100% done/wh", False),
    "tilde": ("~backup/wh~", False),
}


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_every_path_spelling_keeps_every_committed_event(tmp_path, monkeypatch, spelling, new_service):
    name, relative = SPELLINGS[spelling]
    work = tmp_path / "work"
    work.mkdir()
    store = Path(name) if relative else work / name
    absolute = work / name
    a = write_native(tmp_path / "a.jsonl", _events("alpha", "ra", 5))
    b = write_native(tmp_path / "b.jsonl", _events("beta", "rb", 7))

    tracewh("ingest", a, "-w", store, cwd=work, check=True)
    tracewh("ingest", b, "-w", store, cwd=work, check=True)  # the second batch once deleted the first's files
    committed = _parquet_files(absolute)
    assert len(committed) == 2

    count = "select benchmark, count(*) as n from events group by 1 order by 1"
    assert tracewh("sql", count, "-w", store, "-f", "csv", cwd=work, check=True).out == "benchmark,n\nalpha,5\nbeta,7\n"
    doctor = tracewh("doctor", "-w", store, cwd=work, check=True)
    assert "uncommitted data files: 0 removed" in doctor.err
    for again in (a, b):
        assert "already ingested" in tracewh("ingest", again, "-w", store, cwd=work, check=True).out
    assert _parquet_files(absolute) == committed and all(p.exists() for p in committed)

    monkeypatch.chdir(work)  # the Python API and the service take the same spelling
    assert tw.open(store).sql("select count(*) from events").fetchall() == [(12,)]
    assert {Path(f) for f in tw.open(store).store.files()} == set(committed)
    client = new_service(store)
    assert client.post("/sql", json={"query": "select count(*) as n from events"}).json()["rows"] == [{"n": 12}]
    assert list((absolute / "_staging").iterdir()) == []


def test_a_relative_tracewh_home_is_resolved_once(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    env = os.environ | {"TRACEWH_HOME": "home dir"}
    for benchmark in ("alpha", "beta"):
        path = write_native(tmp_path / f"{benchmark}.jsonl", _events(benchmark, benchmark, 3))
        tracewh("ingest", path, env=env, cwd=work, check=True)
    out = tracewh("sql", "select count(*) as n from events", "-f", "csv", env=env, cwd=work, check=True).out
    assert out == "n\n6\n" and len(_parquet_files(work / "home dir" / "warehouse")) == 2


def test_a_path_the_delta_library_cannot_hold_is_refused_before_anything_is_written(tmp_path):
    store = tmp_path / "a%41b" / "wh"  # delta-rs would read "%41" as "A" when it opens the log
    result = tracewh("ingest", write_native(tmp_path / "a.jsonl", _events("alpha", "r", 2)), "-w", store)
    assert result.code == 2 and "'%41'" in result.err and "choose a directory" in result.err
    assert not store.parent.exists()


def test_orphan_removal_never_deletes_a_file_any_version_references(tmp_path):
    store = tmp_path / "wh"
    for n, name in enumerate(("a", "b", "c"), start=2):
        tracewh("ingest", write_native(tmp_path / f"{name}.jsonl", _events(name, name, n)), "-w", store, check=True)
    committed = _parquet_files(store)
    stray = committed[0].with_name("part-00099-left-by-a-dead-writer.zstd.parquet")
    stray.write_bytes(committed[0].read_bytes())
    from deltalake import DeltaTable

    DeltaTable(str(store / "events")).create_checkpoint()
    removed = tw.open(store).doctor()["uncommitted data files"]
    assert removed == [str(stray)] and _parquet_files(store) == committed
    for version in (1, 2, 3):  # every version still reads whole
        assert tw.open(store, version).sql("select count(*) from events").fetchall() == [(sum(range(2, version + 2)),)]


def test_a_long_lived_writer_looks_for_orphans_at_its_first_commit_then_once_an_interval(tmp_path, monkeypatch):
    """Looking lists every data file on disk (a live store keeps them all): a writer that commits
    a second time within ORPHANS_EVERY_S does not look again; once the interval is past it does."""
    from tracewh.warehouse import store as store_module

    wh = tw.open(tmp_path / "wh")
    wh.ingest([write_native(tmp_path / "a.jsonl", _events("a", "a", 2))])
    stray = _parquet_files(tmp_path / "wh")[0].with_name("part-00099-left-by-a-dead-writer.zstd.parquet")
    stray.write_bytes(b"not parquet")
    wh.ingest([write_native(tmp_path / "b.jsonl", _events("b", "b", 2))])
    assert stray.exists()  # the same writer, within the interval
    monkeypatch.setattr(store_module, "ORPHANS_EVERY_S", 0.0)
    wh.ingest([write_native(tmp_path / "c.jsonl", _events("c", "c", 2))])
    assert not stray.exists()
    assert wh.sql("select count(*) from events").fetchall() == [(6,)]
    stray.write_bytes(b"not parquet")
    monkeypatch.setattr(store_module, "ORPHANS_EVERY_S", 3600.0)
    tw.open(tmp_path / "wh").ingest([write_native(tmp_path / "d.jsonl", _events("d", "d", 2))])
    assert not stray.exists()  # a new writer looks at its first commit


# -- concurrent ingests through the service -----------------------------------------

def _archive(folder: Path, name: str, events: list[dict]) -> Path:
    return write_zip(folder / f"{name}.zip", {"events.jsonl": native_lines(events)})


def _upload(base: str, archive: Path) -> httpx.Response:
    return httpx.post(f"{base}/ingest", files={"file": (archive.name, archive.read_bytes())},
                      headers={"Authorization": f"Bearer {TOKEN}"}, timeout=300)


def test_concurrent_service_ingests_never_commit_a_bad_batch_nor_refuse_a_good_one(tmp_path):
    rounds = int(os.environ.get("TRACEWH_SAFETY_ROUNDS", "20"))
    store = tmp_path / "wh"
    with serving(store, token=TOKEN) as base, ThreadPoolExecutor(12) as pool:
        for r in range(rounds):
            bad = _archive(tmp_path, f"bad{r}", [*_events("custom", f"bad{r}", 2, prompt_tokens=-5),
                                                  {"run_id": f"bad{r}", "benchmark": "custom", "kind": "score",
                                                   "seq": 9, "score": 1.5}])
            good = [_archive(tmp_path, f"good{r}-{i}", _events("custom", f"good{r}-{i}", 3 + i)) for i in range(3)]
            answers = list(pool.map(lambda a: _upload(base, a), [bad, *good]))
            assert answers[0].status_code == 422, answers[0].text
            assert "refused by the data-quality gate" in answers[0].json()["detail"]
            assert [(a.status_code, a.json()["added"]) for a in answers[1:]] == [(200, 3), (200, 4), (200, 5)]
        copies = list(pool.map(lambda _: _upload(base, good[0]), range(12)))  # one archive, 12 times at once
    assert all(c.status_code == 200 for c in copies), [c.text for c in copies]
    assert sorted(c.json()["already_ingested"] for c in copies) == [True] * 12  # it came in during the last round

    fresh = _archive(tmp_path, "fresh", _events("custom", "fresh", 4))
    with serving(store, token=TOKEN) as base, ThreadPoolExecutor(12) as pool:
        copies = list(pool.map(lambda _: _upload(base, fresh), range(12)))
    assert sorted((c.status_code, c.json()["already_ingested"], c.json()["added"]) for c in copies) == [
        (200, False, 4)] + [(200, True, 0)] * 11
    wh = tw.open(store)
    assert len(wh.log()) == 3 * rounds + 1  # exactly one commit per good archive
    assert wh.sql("select count(*) from events where run_id like 'bad%'").fetchall() == [(0,)]
    assert tracewh("check", "-w", store).code == 0


# -- killed processes ----------------------------------------------------------------

RECORDING_CHILD = """
import sys
sys.path.insert(0, {tests!r})
import httpx2, openai, tracewh
from fake_llm import FakeLLM, openai_completion

fake = FakeLLM(default=openai_completion("gpt-5.4"))
plain = openai.OpenAI(api_key="x", base_url=fake.openai_url, http_client=httpx2.Client(transport=fake.transport()))
with tracewh.record("killed", spool=sys.argv[1]) as rec:
    client = rec.wrap(plain)
    i = 0
    while True:
        with rec.task(f"t{{i}}"):
            client.chat.completions.create(model="gpt-5.4", messages=[{{"role": "user", "content": "hi"}}])
            print(i, flush=True)  # the call has returned to its caller
        i += 1
"""


def _recorded_tasks(spool: Path) -> set[str]:
    tasks = set()
    for part in spool.rglob("part-*.jsonl"):
        for line in part.read_bytes().splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a torn last line
            if event.get("kind") == "llm_call":
                tasks.add(event["task_id"])
    return tasks


def test_kill_9_loses_no_call_that_had_returned(tmp_path):
    trials = int(os.environ.get("TRACEWH_KILL_TRIALS", "20"))
    script = tmp_path / "child.py"
    script.write_text(RECORDING_CHILD.format(tests=str(TESTS)))
    rng = random.Random(15)
    missing, returned_total = {}, 0
    for trial in range(trials):
        spool = tmp_path / "spool" / f"trial{trial}"
        child = subprocess.Popen([sys.executable, str(script), str(spool)], stdout=subprocess.PIPE, text=True)
        returned = [child.stdout.readline()]  # the first call has returned
        threading.Timer(rng.uniform(0, 2), child.kill).start()  # SIGKILL
        returned += child.stdout.readlines()
        child.wait()
        assert child.returncode == -signal.SIGKILL
        seen = {f"t{int(line)}" for line in returned if line.strip()}
        returned_total += len(seen)
        if lost := seen - _recorded_tasks(spool):
            missing[trial] = sorted(lost)
    assert missing == {} and returned_total >= trials
    tracewh("ingest", tmp_path / "spool", "-w", tmp_path / "wh", check=True)  # torn tails and all
    assert tw.open(tmp_path / "wh").sql("select count(*) from llm_calls").fetchall()[0][0] >= returned_total


KILLED_AFTER_STAGING = """
import os, signal, sys
from tracewh.warehouse.store import Store
with Store(sys.argv[1]).staging() as folder:
    (folder / "part-0.parquet").write_bytes(b"half a batch")
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_staging_left_by_a_killed_ingest_goes_on_the_next_ingest_even_an_already_ingested_one(tmp_path):
    store, batch = tmp_path / "wh", write_native(tmp_path / "a.jsonl", _events("alpha", "r", 3))
    tracewh("ingest", batch, "-w", store, check=True)
    subprocess.run([sys.executable, "-c", KILLED_AFTER_STAGING, str(store)])
    assert len(list((store / "_staging").iterdir())) == 2  # the folder and its lock file
    assert "already ingested" in tracewh("ingest", batch, "-w", store, check=True).out
    assert list((store / "_staging").iterdir()) == []


# -- file modes ----------------------------------------------------------------------

def test_store_files_are_never_wider_than_0644_even_with_umask_000(tmp_path):
    store = tmp_path / "wh"
    batch = write_native(tmp_path / "a.jsonl", _events("alpha", "r", 3))
    subprocess.run([sys.executable, "-m", "tracewh", "ingest", str(batch), "-w", str(store)], check=True,
                   capture_output=True, preexec_fn=lambda: os.umask(0))
    modes = {p: stat.S_IMODE(p.stat().st_mode) for p in [store, *store.rglob("*")]}
    assert all(mode & 0o022 == 0 for mode in modes.values()), {str(p): oct(m) for p, m in modes.items() if m & 0o022}
    assert any(p.suffix == ".parquet" for p in modes)


def test_the_spool_is_private_to_its_owner(tmp_path):
    old = os.umask(0)
    try:
        with tw.record("r", spool=tmp_path / "new" / "spool") as rec:
            rec.score(quality=1.0)
    finally:
        os.umask(old)
    folder = rec.spool.folder
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(folder.parent.stat().st_mode) == 0o700  # created by us, so ours to close
    assert [stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()] == [0o600]
