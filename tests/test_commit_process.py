"""The OTLP committer's store work in a process of its own (service/commit_process.py), and the
service's query threads yielding the CPU (service/gate.py, service/priority.py).

- The process commits real OTLP requests into a real store and builds the version's catalog;
  this process reads what it committed.
- A refusal comes back as the same TracewhError; any other failure as RuntimeError (which the
  committer retries); a killed process is replaced by the next call; the process ends when
  its server is killed -9.
- The service's committer uses it: a span posted to the app is committed by another process.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from test_otel import one_span_request, settled

import otel_spans as ots
import tracewh as tw
from tracewh.errors import BadInputError
from tracewh.queries.catalog import catalog_path
from tracewh.service.commit_process import CommitProcess
from tracewh.service.gate import QueryGate
from tracewh.service.priority import NICENESS

pytestmark = pytest.mark.skipif(ots.MISSING is not None, reason=ots.MISSING or "")
TOKEN = "commit-process-token"


def requests(run_id: str, first: int, count: int) -> list[bytes]:
    return [one_span_request(run_id, first + n).SerializeToString() for n in range(count)]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie (killed, not yet reaped) has ended all the same
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_the_process_commits_and_builds_the_catalog_this_process_reads(tmp_path):
    wh = tmp_path / "store with spaces"
    store = CommitProcess(wh)
    try:
        store.start()
        assert store.pid is not None and store.pid != os.getpid()
        report = store.ingest_otlp(requests("apart", 1, 3))
        assert report.added == 3
        store.prepare()
        version = tw.open(wh).version
        assert catalog_path(wh, version).exists()  # built by the other process
        assert tw.open(wh).sql("select count(*) from events where run_id = 'apart'").fetchall()[0][0] == 3
        assert store.ingest_otlp(requests("apart", 1, 3)).added == 0  # the same spans again add nothing
    finally:
        store.close()


def test_nothing_in_the_servers_working_directory_shadows_a_module_of_the_process(tmp_path, monkeypatch):
    (tmp_path / "duckdb.py").write_text("raise SystemExit('a stray duckdb.py was imported')\n")
    monkeypatch.chdir(tmp_path)  # a user's project folder, where `tracewh serve` was started
    store = CommitProcess(tmp_path / "wh")
    try:
        assert store.ingest_otlp(requests("shadow", 1, 1)).added == 1
    finally:
        store.close()


def test_a_refusal_comes_back_as_itself_and_any_other_failure_as_a_runtime_error(tmp_path):
    store = CommitProcess(tmp_path / "wh")
    try:
        with pytest.raises(BadInputError, match="POST /v1/traces, line 1"):
            store.ingest_otlp([b"not a request"])
        assert store.ingest_otlp(requests("after", 1, 1)).added == 1
        with pytest.raises(RuntimeError, match="TypeError"):
            store.optimize(when_over="many")  # not the data's fault: the committer retries these
        assert store.ingest_otlp(requests("after", 2, 1)).added == 1  # the process is still serving
    finally:
        store.close()


def test_a_killed_process_is_replaced_by_the_next_call(tmp_path):
    store = CommitProcess(tmp_path / "wh")
    try:
        store.start()
        first = store.pid
        os.kill(first, signal.SIGKILL)  # the OOM killer, an operator's kill, between two commits
        os.waitpid(first, 0)  # gone before the next call
        assert store.ingest_otlp(requests("replaced", 1, 2)).added == 2
        assert store.pid != first
    finally:
        store.close()


def test_the_process_s_batches_share_one_duckdb_instance_whose_folder_a_later_ingest_removes(tmp_path):
    """Its spill folder is held for the process's life, not made per batch; killed -9, the process
    leaves it, and the next ingest finds it abandoned (as it finds a killed ingest's)."""
    wh = tmp_path / "wh"
    store = CommitProcess(wh)
    try:
        for first in (1, 3, 5):
            assert store.ingest_otlp(requests("kept", first, 2)).added == 2
        with pytest.raises(BadInputError):  # a refused batch leaves the instance to the next
            store.ingest_otlp([b"not a request"])
        assert store.ingest_otlp(requests("kept", 7, 2)).added == 2
        (held,) = [p for p in (wh / "_staging").iterdir() if p.is_dir()]
        os.kill(store.pid, signal.SIGKILL)
        os.waitpid(store.pid, 0)
    finally:
        store.close()
    tw.open(wh).ingest_otlp(requests("later", 1, 1))
    assert not held.exists()
    assert tw.open(wh).sql("select count(*) from events where run_id = 'kept'").fetchall()[0][0] == 8


SERVER = """
import sys, time
from pathlib import Path
from tracewh.service.commit_process import CommitProcess
store = CommitProcess(Path(sys.argv[1]))
store.start()
print(store.pid, flush=True)
time.sleep(600)
"""


def test_the_process_ends_when_its_server_is_killed(tmp_path):
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(tmp_path / "wh")], stdout=subprocess.PIPE, text=True)
    child = int(server.stdout.readline())
    assert alive(child)
    server.send_signal(signal.SIGKILL)
    server.wait(timeout=30)
    deadline = time.monotonic() + 10
    while alive(child):
        assert time.monotonic() < deadline, "the commit process outlived its server by 10 s"
        time.sleep(0.1)


def test_the_service_commits_spans_in_its_commit_process(tmp_path):
    from tracewh.service.app import create_app
    from tracewh.service.config import ServiceConfig

    wh = tmp_path / "wh"
    app = create_app(ServiceConfig(wh, token=TOKEN))
    with TestClient(app, base_url="http://127.0.0.1") as client:  # with: the app's startup starts the process
        answer = client.post("/v1/traces", content=requests("served", 1, 1)[0],
                             headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/x-protobuf"})
        assert answer.status_code == 200
        settled(wh)
        committer = app.state.otlp_committer
        assert committer.ready.is_set() and committer.process.pid != os.getpid()
        assert client.get("/health").json()["ingest_ready"] is True
        child = committer.process.pid
    assert tw.open(wh).sql("select count(*) from events where run_id = 'served'").fetchall()[0][0] == 1
    assert not alive(child)  # the app's shutdown ended it


def test_a_catalog_says_in_the_log_how_it_was_made(tmp_path, caplog):
    wh = tmp_path / "wh"
    store = tw.open(wh)
    store.ingest_otlp(requests("logged", 1, 1))
    with caplog.at_level(logging.DEBUG, logger="tracewh.catalog"):
        store.prepare()
        store.ingest_otlp(requests("logged", 2, 1))
        tw.open(wh).prepare()
    made = [r.getMessage() for r in caplog.records if r.name == "tracewh.catalog"]
    assert len(made) == 2 and "built from scratch" in made[0] and "derived from v" in made[1], made


def test_query_threads_yield_the_cpu_and_the_caller_keeps_its_priority():
    gate = QueryGate(running=2, waiting=2, wait_s=5)
    caller = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    async def ask() -> tuple[int, int]:
        return await gate.run(lambda: (os.getpriority(os.PRIO_PROCESS, threading.get_native_id()),
                                       threading.get_native_id()))

    niceness, thread = asyncio.run(ask())
    assert thread != threading.get_native_id()
    assert niceness == max(caller, NICENESS)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == caller


def test_a_query_worker_started_by_a_query_thread_runs_at_its_own_niceness(tmp_path):
    """Workers start when a query first needs one, from that query's thread (at nice 10): the
    worker runs at WORKER_NICENESS all the same (the server's 0 plus it, at most 19), not at the
    thread's niceness plus it."""
    from tracewh.queries.engine import QueryEngine
    from tracewh.queries.isolation import WORKER_NICENESS, QueryWorkers

    before = _query_workers()  # another test in this process may have left its workers running
    workers = QueryWorkers(1, process_memory=1 << 30)
    server = os.getpriority(os.PRIO_PROCESS, 0)
    try:
        gate = QueryGate(running=1, waiting=1, wait_s=5)
        answer = asyncio.run(gate.run(lambda: QueryEngine([], isolation=workers).execute("select 42").fetchall()))
        assert answer == [(42,)]
        after = _query_workers()
        assert [after[pid] for pid in after.keys() - before.keys()] == [min(19, server + WORKER_NICENESS)]
    finally:
        workers.close()


def _query_workers() -> dict[int, int]:
    """This process's query worker children: pid -> niceness (a process that ends meanwhile is skipped)."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # after the command's name: state, ppid, ...
            if int(fields[1]) == os.getpid() and b"isolation import main" in (stat.parent / "cmdline").read_bytes():
                found[int(stat.parent.name)] = int(fields[16])
        except (OSError, ValueError):
            continue
    return found


def test_the_commit_process_derives_its_catalogs_on_one_thread_with_every_row(tmp_path, monkeypatch):
    """Its derivations run back to back beside the server's queries: one DuckDB thread each
    (0.54 CPU-s a derivation against 0.86 on two), and the catalog has a full build's rows."""
    from test_catalog_incremental import differences, scratch_build

    from tracewh.queries import catalog
    from tracewh.service.commit_process import as_committer
    from tracewh.warehouse.store import Store

    monkeypatch.setattr(catalog, "DERIVATION_THREADS", None)  # put back after the test
    as_committer()
    threads, real = [], catalog._refresh

    def counting(con, files):
        threads.append(con.execute("select current_setting('threads')").fetchone()[0])
        return real(con, files)

    monkeypatch.setattr(catalog, "_refresh", counting)
    wh = tmp_path / "a store"
    tw.open(wh).ingest_otlp(requests("first", 1, 2))
    tw.open(wh).prepare()  # built from scratch: every core
    tw.open(wh).ingest_otlp(requests("second", 2, 2))
    tw.open(wh).prepare()
    assert threads == [1]
    assert differences(catalog.catalog_path(wh, Store(wh).version()), scratch_build(wh, tmp_path)) == {}
