"""No query can take the server down: the service runs its queries in worker processes it kills
at their memory ceiling or time limit (queries/isolation.py), and they spill to a capped
temporary folder of the service's own.

Each hostile query below once did: `unnest(range(500000000))` took a server to 16.4 GB and
answered 49 s after a 10 s limit, `repeat('x', 2000000000)` to 4.5 GB (DuckDB's memory_limit
does not cover one huge scalar value, nor does its interrupt stop one), and a sort larger than
the memory limit spilled 6.2 GB into the server's working directory in 10 s.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hardening import file_sizes, peak_while
from helpers import tracewh
from test_service_abuse import PEAK_MB, Server, serve

import tracewh as tw
from tracewh.demo.agent_runs import write_demo_runs

pytestmark = pytest.mark.exclusive  # its answers are timed (tests/conftest.py)
QUERY_SECONDS = 2.0
HOSTILE = {"a list of 500 million numbers": "select count(*) from (select unnest(range(500000000)))",
           "a 2 GB string": "select repeat('x', 2000000000) as s"}


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("limits")
    wh = tw.open(folder / "wh")
    wh.ingest(write_demo_runs(folder / "runs", tasks=2))
    wh.query("select count(*) from runs")  # the catalog, compiled once
    return wh.path


@pytest.fixture(scope="module")
def server(store, tmp_path_factory) -> Iterator[Server]:
    """A real `tracewh serve` with a 2 s time limit and its default memory limits."""
    with serve(store, tmp_path_factory.mktemp("tmp"), QUERY_SECONDS) as running:
        # A first query: the server's first read and its worker's start are not the limit's business
        # (under the whole suite's load they took the first hostile query 1.2 s past its bound).
        httpx.post(f"{running.base}/sql", json={"query": "select 1 from runs"}, timeout=60)
        yield running


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_scalar_query_is_stopped_within_its_limits_and_the_server_goes_on(server, name):
    started = time.monotonic()
    answer = httpx.post(f"{server.base}/sql", json={"query": HOSTILE[name]}, timeout=60)
    took = time.monotonic() - started
    assert answer.status_code in (400, 408), answer.text[:300]
    detail = answer.json()["detail"]
    assert "more memory than it may use" in detail or "time limit" in detail, detail
    assert took <= QUERY_SECONDS + 1, f"answered {took:.1f} s after it was sent"
    assert server.peak_mb() <= PEAK_MB, f"server and workers peaked at {server.peak_mb():.0f} MB"
    after = httpx.post(f"{server.base}/sql", json={"query": "select count(*) as n from runs"}, timeout=30)
    assert after.status_code == 200 and after.json()["rows"][0]["n"] > 0, after.text


def test_limits_raise_the_same_errors_across_the_process_boundary(store, new_service):
    """A refusal inside a worker reaches the client as the error the same limit raises in-process."""
    client = new_service(store, query_seconds=1)
    unknown = client.post("/sql", json={"query": "select * from runz"})
    assert unknown.status_code == 400 and unknown.json()["error"] == "QueryError"
    assert "Did you mean runs" in unknown.json()["detail"]
    endless = client.post("/sql", json={"query": "select count(*) from range(1000000000000) a"})
    assert endless.status_code == 408 and endless.json() == {"error": "QueryTimeout",
                                                             "detail": "query stopped after 1 s (its time limit)"}
    assert client.get("/runs/nope").status_code == 404  # NotFoundError, from rows the worker sent
    assert client.post("/sql", json={"query": "select 41 + 1 as n"}).json()["rows"] == [{"n": 42}]


def test_a_started_pool_has_paid_the_servers_first_query_costs(monkeypatch):
    """Opening the parsing database and listing DuckDB's volatile functions happen when the server
    starts, not in its first query's time (they made a fresh server's first answer miss a 1 s limit)."""
    from tracewh.queries import isolation, parse, result_cache

    monkeypatch.setattr(parse, "_shared", None)  # as in a new process
    monkeypatch.setattr(parse, "_local", threading.local())
    result_cache._changing_words.cache_clear()
    workers = isolation.QueryWorkers(1, 1 << 30)
    try:
        workers.start()
        assert parse._shared is not None and parse._shared[0] == os.getpid()
        assert result_cache._changing_words.cache_info().currsize == 1
    finally:
        workers.close()
        if parse._shared is not None:
            parse._shared[1].close()  # the test's own parsing database (monkeypatch restores the process's)


def spill_peak(folder: Path, work) -> tuple[object, int]:
    """Run `work()` while summing the sizes of the files under `folder`: (its result, the largest sum seen)."""
    return peak_while(work, lambda: sum(file_sizes(folder)))


def sort_of(rows: int) -> str:
    return f"select count(*) as n from (select i, repeat('x', 20) s from range({rows}) t(i) order by s, i desc)"


def test_a_query_that_spills_stays_within_the_services_temp_cap(store, tmp_path, monkeypatch, new_service):
    """Spill goes to a folder of the service's own under the system's temporary directory, never
    the working directory, and stops at the cap with a clear error."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    cap = 200 << 20  # one worker and the server's own engine: 100 MB each
    client = new_service(store, query_seconds=60, query_memory="64MB", running_queries=1, query_temp_bytes=cap)
    small, spilled = spill_peak(tmp_path / "tmp", lambda: client.post("/sql", json={"query": sort_of(3_000_000)}))
    assert small.status_code == 200 and small.json()["rows"] == [{"n": 3_000_000}], small.text
    assert spilled > 0, "the query was meant to spill"
    large, peak = spill_peak(tmp_path / "tmp", lambda: client.post("/sql", json={"query": sort_of(30_000_000)}))
    assert large.status_code == 400, large.text
    assert "more temporary disk space than it may use" in large.json()["detail"], large.text
    assert peak <= cap // 2, f"spilled {peak >> 20} MB"
    assert list((tmp_path / "cwd").iterdir()) == []
    assert client.post("/sql", json={"query": "select 1 as one"}).status_code == 200


def test_a_killed_servers_spill_folder_is_removed_by_the_next_server(store, tmp_path, monkeypatch, new_service):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    orphan = tmp_path / "tracewh-serve-spill-999999999-abc" / "worker-x"  # no such process
    orphan.mkdir(parents=True)
    (orphan / "duckdb_temp_block").write_bytes(b"x" * 4096)
    client = new_service(store)
    assert client.post("/sql", json={"query": "select 1 as one"}).status_code == 200
    assert [p.name.split("-")[3] for p in tmp_path.iterdir()] == [str(os.getpid())]


def test_the_cli_spills_under_the_temporary_directory_not_the_working_directory(store, tmp_path):
    (tmp_path / "tmp").mkdir()
    (tmp_path / "cwd").mkdir()
    result = tracewh("sql", "select current_setting('temp_directory') as t", "-f", "csv", "-w", store,
                     cwd=tmp_path / "cwd", env=os.environ | {"TMPDIR": str(tmp_path / "tmp")})
    assert result.code == 0, result.err
    assert result.out.splitlines()[1].startswith(f"{tmp_path / 'tmp'}/tracewh-spill-"), result.out
    assert list((tmp_path / "cwd").iterdir()) == []
