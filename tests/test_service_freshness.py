"""What the service reads while a new version's catalog is being built (#34, service/readers.py):
no request waits for a build it does not need, and what the service acknowledged is in the
next answer.

A test that must keep a build from finishing holds the catalog folder's build lock from this
process, as a long build by another process would.
"""

from __future__ import annotations

import fcntl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from helpers import llm_call, serving, tracewh, write_native

import tracewh as tw

pytestmark = pytest.mark.exclusive  # freshness is timed (tests/conftest.py)
TOKEN = "fresh-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def count(base: str) -> int:
    answer = httpx.post(f"{base}/sql", json={"query": "select count(*) as n from llm_calls"}, headers=AUTH, timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.json()["rows"][0]["n"]


@contextmanager
def builds_held(wh: Path) -> Iterator[None]:
    """The catalog build lock, held here: no process can build a catalog meanwhile."""
    with open(wh / "_catalog" / ".build.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def ingest(folder: Path, wh: Path, run: str, calls: int) -> None:
    tracewh("ingest", write_native(folder / f"{run}.jsonl", [llm_call(run, i) for i in range(calls)]), "-w", wh,
            check=True)


def test_nobody_waits_for_a_build_another_is_making_and_a_commit_nobody_builds_is_read_at_once(tmp_path):
    wh = tmp_path / "wh"
    ingest(tmp_path, wh, "first", 3)
    with serving(wh, token=TOKEN) as base:
        assert count(base) == 3  # version 1's catalog: built by this first read
        with builds_held(wh):  # another process builds catalogs (version 2's, once it commits)
            ingest(tmp_path, wh, "second", 2)
            started = time.monotonic()
            assert count(base) == 3  # answered from version 1, not waiting for version 2's build
            assert time.monotonic() - started < 10
        assert count(base) == 5  # nobody builds version 2 now: the read builds it and sees the commit
        ingest(tmp_path, wh, "third", 1)  # a commit nobody is building: read at once, as `tracewh sql` would
        assert count(base) == 6


def test_what_post_ingest_acknowledged_is_in_the_next_answer(tmp_path):
    wh = tmp_path / "wh"
    ingest(tmp_path, wh, "first", 3)
    with serving(wh, token=TOKEN) as base:
        assert count(base) == 3
        upload = write_native(tmp_path / "more.jsonl", [llm_call("more", i) for i in range(4)])
        with upload.open("rb") as file:
            answer = httpx.post(f"{base}/ingest", files={"file": ("more.jsonl", file)}, headers=AUTH, timeout=60)
        assert answer.status_code == 200, answer.text
        assert count(base) == 7  # the ingest built its version's catalog before it answered


def test_a_read_leaves_a_catalog_the_committer_is_about_to_build_to_it(tmp_path):
    """Between a commit of the OTLP committer and its catalog (or a second commit it makes first),
    a read answers from the newest built version instead of building one itself: a build in the
    request held the committer's next build up behind the lock (Readers.builders)."""
    from tracewh.queries.catalog import catalog_path, readable_version
    from tracewh.warehouse.layout import latest_version

    wh = tmp_path / "wh"
    ingest(tmp_path, wh, "first", 3)
    tracewh("sql", "-w", wh, "select 1", check=True)  # the first version's catalog
    built = latest_version(wh / "events")
    ingest(tmp_path, wh, "second", 2)
    newest = latest_version(wh / "events")
    assert newest > built and not catalog_path(wh, newest).exists()
    assert readable_version(wh, newest, built_soon=True) == built  # the committer will build it
    assert readable_version(wh, newest) == newest  # nobody will: the reader builds it
    tracewh("sql", "-w", wh, "select 1", check=True)
    assert readable_version(wh, newest, built_soon=True) == newest  # built: read as it is


def test_a_service_says_when_it_is_ready_to_commit_and_an_empty_store_has_its_empty_catalog_by_then(tmp_path):
    """/health `ingest_ready`: the OTLP committer has loaded, and for a store without data built the
    empty catalog its first commit's catalog is derived from (a readiness probe waits for this)."""
    from test_otel import genai_run

    import otel_spans as ots
    from tracewh.queries import catalog

    wh = tmp_path / "new store"
    with serving(wh, token=TOKEN, ingest_ready=True) as base:
        assert httpx.get(f"{base}/health").json()["ingest_ready"] is True
        assert list((wh / catalog.FOLDER).glob(f"{catalog.EMPTY}-*.duckdb"))
        _, spans = genai_run("ready-run", seed=5)
        body = ots.otlp_request(spans).SerializeToString()
        answer = httpx.post(f"{base}/v1/traces", content=body, headers=AUTH | {"Content-Type": "application/x-protobuf"})
        assert answer.status_code == 200, answer.text
        calls, deadline = sum(1 for s in spans if s.name.startswith("chat")), time.monotonic() + 30
        assert calls > 0
        while count(base) < calls:
            assert time.monotonic() < deadline, "the spans never became queryable"
            time.sleep(0.05)


def test_a_service_without_a_token_is_never_ready_to_ingest(tmp_path):
    ingest(tmp_path, tmp_path / "wh", "first", 1)
    with serving(tmp_path / "wh") as base:
        assert httpx.get(f"{base}/health").json()["ingest_ready"] is False


def test_a_compaction_s_catalog_is_the_committer_s_to_build_and_waits_for_the_next_commit_while_requests_wait(
        tmp_path):
    """While the OTLP committer compacts, reads answer from the version before the compaction (a
    read that built the compaction's catalog itself held the committer's next build up: seen in
    the live bench); with requests waiting, that catalog is left to the next commit's derivation,
    and reads keep the version before until then; with none, it is built at once."""
    from tracewh.queries.catalog import catalog_path
    from tracewh.service.compaction import Compactor
    from tracewh.service.otlp_spool import Committer
    from tracewh.warehouse.layout import latest_version

    wh = tmp_path / "wh"
    for n in range(3):
        ingest(tmp_path, wh, f"r{n}", 2)
    tracewh("sql", "-w", wh, "select 1", check=True)
    committer = Committer(wh, max_bytes=1 << 20, compactor=Compactor(files=0, interval_s=0))
    store, reads_before = tw.open(wh), []

    class Watched:  # the store, telling whether a read would wait for the committer's build
        def needs_optimize(self, when_over, target_bytes):
            return store.needs_optimize(when_over, target_bytes)

        def optimize(self, **options):
            reads_before.append(committer.building_soon())
            return store.optimize(**options)

        def prepare(self):
            store.prepare()

    committer.process = Watched()
    committer.waiting.put("a request")  # waiting: the compaction's catalog goes with the next commit
    committer._compact()  # noqa: SLF001 - one step of the committer's loop
    compacted = latest_version(wh / "events")
    assert reads_before == [True, True] and not catalog_path(wh, compacted).exists()
    assert committer.building_soon()  # reads still answer from the version before
    committer.waiting.get()
    ingest(tmp_path, wh, "r3", 2)  # another commit, then nothing waits: a compaction's catalog at once
    committer.compactor = Compactor(files=0, interval_s=0)
    committer._catalog_due = False  # noqa: SLF001 - the next cycle built its catalog
    committer._compact()  # noqa: SLF001
    assert catalog_path(wh, latest_version(wh / "events")).exists() and not committer.building_soon()


def test_a_compaction_check_with_nothing_to_compact_builds_no_catalog(tmp_path):
    """The committer checks for compaction every few seconds: a check that finds no partition over
    its count builds nothing (a catalog built there, between two of one exporter's commits, held
    the next commit up by a derivation nobody read)."""
    from tracewh.queries.catalog import catalog_path
    from tracewh.service.compaction import Compactor
    from tracewh.warehouse.layout import latest_version

    wh = tmp_path / "wh"
    for n in range(3):  # three commits, a data file each in one partition
        ingest(tmp_path, wh, f"r{n}", 2)
    store, newest = tw.open(wh), latest_version(wh / "events")
    assert not store.needs_optimize(3) and store.needs_optimize(2)
    Compactor(files=3, interval_s=0).compact_if_due(store)
    assert latest_version(wh / "events") == newest and not catalog_path(wh, newest).exists()
    Compactor(files=2, interval_s=0).compact_if_due(store)  # due: the version compacted, then the compaction's
    assert latest_version(wh / "events") == newest + 1
    assert catalog_path(wh, newest).exists() and catalog_path(wh, newest + 1).exists()


def test_a_read_whose_catalog_was_removed_meanwhile_reads_the_newest_version(tmp_path, monkeypatch):
    """Builders keep the newest few catalogs: a request that waited in the queue while live ingest
    made versions found the catalog of the version it had chosen gone (a 500 in the live bench).
    It is read again, on the newest version then."""
    from tracewh.queries.catalog import catalog_path
    from tracewh.queries.isolation import QueryWorkers
    from tracewh.service.readers import Readers

    wh = tmp_path / "wh"
    ingest(tmp_path, wh, "first", 3)
    ingest(tmp_path, wh, "second", 2)
    tracewh("sql", "-w", wh, "--as-of", "1", "select 1", check=True)
    tracewh("sql", "-w", wh, "select 1", check=True)
    readers, chosen = Readers(wh, "512MB", keep=2, isolation=QueryWorkers(1, 1 << 30)), []
    newest = readers._ready  # noqa: SLF001
    monkeypatch.setattr(readers, "_ready", lambda latest: 1 if not chosen else newest(latest))  # chosen before v2

    def work(read):
        chosen.append(read.pinned)
        if len(chosen) == 1:  # removed (as builders prune) after the read found it, before it is opened
            assert read.engine.spec.catalog == catalog_path(wh, 1)
            catalog_path(wh, 1).unlink()
        return read.query("select count(*) from llm_calls").fetchall()

    try:
        assert readers.read(work) == [(5,)] and chosen == [1, 2]
    finally:
        readers.close()
