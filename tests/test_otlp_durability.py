"""POST /v1/traces answers 200 once a request is durable in the store's write-ahead spool
(WAREHOUSE/_spool/otlp/), not once it is committed (issue #34): what that promise means.

- A 200 survives kill -9 of `tracewh serve`: restarted, the service commits the spool, every
  acknowledged span exactly once (real races: the server is killed right after a 200, under load).
- A torn record at the spool's end (a write the crash cut short, never acknowledged) is dropped whole.
- A refused request (4xx) puts nothing in the spool.
- Spans are queryable within 2 s of their 200; a request the gate refuses after its 200 goes to
  the quarantine; a full spool answers 503 with Retry-After; small commits are compacted.

A test that must keep requests in the spool holds the store's writer lock from this process, as a
long `tracewh ingest` of another process would: the committers wait for it, the receiver does not.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from hardening import count
from helpers import free_port, store_version
from test_otel import _ends_before_start, genai_run, one_span_request, rows, settled

import otel_spans as ots
import tracewh as tw
from tracewh.warehouse.wal import read_records

pytestmark = [pytest.mark.skipif(ots.MISSING is not None, reason=ots.MISSING or ""),
              pytest.mark.exclusive]  # freshness and shared fsyncs are timed (tests/conftest.py)

TOKEN = "durability-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PROTOBUF = {**AUTH, "Content-Type": "application/x-protobuf"}
SPANS_PER_REQUEST = 8
KILL_TRIALS = count(ci=3, heavy=20)


class Serve:
    """`tracewh serve` as a real process that can be killed -9."""

    def __init__(self, wh: Path):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen([sys.executable, "-m", "tracewh", "serve", "--port", str(self.port), "-w", str(wh)],
                                        env=os.environ | {"TRACEWH_SERVICE_TOKEN": TOKEN},
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            assert self.process.poll() is None, f"tracewh serve exited {self.process.returncode}"
            try:
                httpx.get(f"{self.base}/health", timeout=1)
                return
            except httpx.TransportError:
                assert time.monotonic() < deadline, "tracewh serve did not start"
                time.sleep(0.1)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)

    def count(self, where: str = "true") -> int:
        answer = httpx.post(f"{self.base}/sql", json={"query": f"select count(*) as n from events where {where}"},
                            headers=AUTH, timeout=30)
        assert answer.status_code == 200, answer.text
        return answer.json()["rows"][0]["n"] if isinstance(answer.json()["rows"][0], dict) else answer.json()["rows"][0][0]


@contextmanager
def serve(wh: Path) -> Iterator[Serve]:
    server = Serve(wh)
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def writer_lock_held(wh: Path) -> Iterator[None]:
    """The store's writer lock, held by this process: commits wait, the receiver still spools."""
    wh.mkdir(parents=True, exist_ok=True)
    with open(wh / ".writer.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def request_of(first_span_id: int, run_id: str = "durable", spans: int = SPANS_PER_REQUEST) -> tuple[bytes, list[str]]:
    """A serialized request of `spans` chat spans with span ids from `first_span_id`, and those ids in hex."""
    request = one_span_request(run_id, first_span_id)
    template = request.resource_spans[0].scope_spans[0].spans[0]
    for n in range(1, spans):
        span = request.resource_spans[0].scope_spans[0].spans.add()
        span.CopyFrom(template)
        span.span_id = (first_span_id + n).to_bytes(8, "big")
    return request.SerializeToString(), [f"{first_span_id + n:016x}" for n in range(spans)]


def spooled_records(wh: Path) -> int:
    return sum(1 for segment in sorted((wh / "_spool" / "otlp").glob("*.wal")) for _ in read_records(segment))


def stored_span_ids(wh: Path) -> list[str]:
    return [r["span_id"] for r in rows(wh, "select span_id from events where run_id = 'durable'")]


# -- (1) a 200 survives kill -9 ------------------------------------------------------------------

def kill_right_after_a_200(wh: Path, rng: random.Random) -> set[str]:
    """4 senders post requests as fast as they are answered; right after the n-th 200 (n drawn at
    random) the server is killed -9. Returns the span ids of every request that got a 200."""
    acknowledged: set[str] = set()
    lock, enough, next_id = threading.Lock(), threading.Event(), iter(range(1, 1 << 40, SPANS_PER_REQUEST))
    kill_after = rng.randint(3, 60)

    def send(client: httpx.Client) -> None:
        while not enough.is_set():
            with lock:
                body, ids = request_of(next(next_id) + (rng.getrandbits(20) << 20))
            try:
                answer = client.post(url, content=body, headers=PROTOBUF, timeout=30)
            except httpx.TransportError:
                return  # killed
            if answer.status_code == 200:
                with lock:
                    acknowledged.update(ids)
                    if len(acknowledged) >= kill_after * SPANS_PER_REQUEST:
                        enough.set()

    server = Serve(wh)
    url = f"{server.base}/v1/traces"
    clients = [httpx.Client() for _ in range(4)]
    senders = [threading.Thread(target=send, args=(client,)) for client in clients]
    for sender in senders:
        sender.start()
    enough.wait(timeout=60)
    with lock:  # no 200 is counted after the kill: what the lock guards is what the server answered before it
        server.kill()
        killed_with = set(acknowledged)
    enough.set()
    for sender in senders:
        sender.join()
    for client in clients:
        client.close()
    return killed_with


@pytest.mark.heavy
def test_every_acknowledged_span_is_stored_exactly_once_after_kill_9(tmp_path):
    rng, left_in_spool = random.Random(34), []
    for trial in range(KILL_TRIALS):
        wh = tmp_path / f"trial-{trial}"
        acknowledged = kill_right_after_a_200(wh, rng)
        left_in_spool.append(spooled_records(wh))
        with serve(wh) as server:  # restarted: the spool is committed before or while it answers
            settled(wh, timeout=30)
            stored = stored_span_ids(wh)
            assert len(stored) == len(set(stored)), f"trial {trial}: a span stored twice"
            assert acknowledged <= set(stored), f"trial {trial}: {len(acknowledged - set(stored))} acknowledged spans lost"
            assert server.count("run_id = 'durable'") == len(stored)
    # the race was real: some kills came between a 200 and its commit
    assert any(left_in_spool), left_in_spool


def test_acknowledged_but_uncommitted_requests_are_committed_on_restart(tmp_path):
    wh = tmp_path / "wh"
    with writer_lock_held(wh):  # nothing commits: every 200 is in the spool only when the server dies
        server = Serve(wh)
        bodies = [request_of(1000 + i * SPANS_PER_REQUEST) for i in range(5)]
        assert all(httpx.post(f"{server.base}/v1/traces", content=body, headers=PROTOBUF, timeout=30).status_code == 200
                   for body, _ in bodies)
        server.kill()
    assert spooled_records(wh) == 5 and store_version(wh) is None
    with serve(wh) as server:
        settled(wh)
        assert sorted(stored_span_ids(wh)) == sorted(i for _, ids in bodies for i in ids)
        assert server.count() == 5 * SPANS_PER_REQUEST


# -- (2) a torn record at the end is dropped whole -----------------------------------------------

def test_a_torn_last_record_is_ignored_and_the_whole_ones_committed(tmp_path):
    wh = tmp_path / "wh"
    with writer_lock_held(wh):
        server = Serve(wh)
        bodies = [request_of(5000 + i * SPANS_PER_REQUEST) for i in range(3)]
        for body, _ in bodies:
            assert httpx.post(f"{server.base}/v1/traces", content=body, headers=PROTOBUF, timeout=30).status_code == 200
        server.kill()
    (segment,) = (wh / "_spool" / "otlp").glob("*.wal")
    whole = segment.read_bytes()
    # a fourth record cut short by the crash: its header promises more bytes than were written
    torn, _ = request_of(9000)
    with open(segment, "ab") as spool:
        spool.write(len(torn).to_bytes(4, "little") + b"\0\0\0\0" + torn[:50])
    assert len(list(read_records(segment))) == 3
    # a last record whose bytes are all there but whose checksum does not match is dropped too
    damaged = tmp_path / "damaged.wal"
    damaged.write_bytes(whole[:-1] + bytes([whole[-1] ^ 1]))
    assert len(list(read_records(damaged))) == 2
    with serve(wh):
        settled(wh)
        assert sorted(stored_span_ids(wh)) == sorted(i for _, ids in bodies for i in ids)
        assert not list((wh / "_spool" / "otlp").glob("*.wal"))  # committed, so removed


def test_concurrent_appends_share_fsyncs_and_each_returns_durable(tmp_path, monkeypatch):
    from tracewh.warehouse import wal

    synced: list[int] = []
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:  # a disk's flush takes time: appends arriving meanwhile wait for the next
        time.sleep(0.02)
        real_fsync(fd)
        synced.append(fd)

    monkeypatch.setattr(wal.os, "fsync", slow_fsync)
    spool = wal.RequestLog(tmp_path / "spool")
    threads = [threading.Thread(target=spool.append, args=(f"request {i}".encode(),)) for i in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(synced) < 16  # 32 appends, far fewer flushes (the folder's own fsync, for the new segment, included)
    assert sorted(p for s in (tmp_path / "spool").glob("*.wal") for p in read_records(s)) == sorted(
        f"request {i}".encode() for i in range(32))
    spool.close()


def test_a_segment_is_deleted_once_every_record_is_released_and_survivors_are_recovered(tmp_path):
    from tracewh.warehouse.wal import RequestLog

    spool = RequestLog(tmp_path / "spool")
    first, second = spool.append(b"a" * 10), spool.append(b"b" * 30)
    assert first == second and spool.waiting_bytes == 40
    spool.release(first, 10)
    assert spool.waiting_bytes == 30 and len(list((tmp_path / "spool").glob("*.wal"))) == 1
    spool.close()
    # as a restarted process finds it: releases are not written down, so the segment's released
    # record comes back too (the caller's commits are idempotent: the OTLP one adds nothing twice)
    again = RequestLog(tmp_path / "spool")
    assert again.recovered() == [(first, b"a" * 10), (second, b"b" * 30)] and again.waiting_bytes == 40
    again.release(first, 10)
    again.release(second, 30)
    assert not list((tmp_path / "spool").glob("*.wal")) and again.waiting_bytes == 0
    assert again.append(b"c") > second  # a new segment, never one an earlier process wrote
    again.close()


# -- (3) a refused request leaves nothing in the spool -------------------------------------------

def test_refused_requests_are_4xx_and_spool_nothing(tmp_path):
    wh = tmp_path / "wh"
    impossible = ots.otlp_json_dict(one_span_request("durable", 0xBAD))
    _ends_before_start(impossible)
    with writer_lock_held(wh):  # the one accepted request stays in the spool, to count against
        server = Serve(wh)
        url = f"{server.base}/v1/traces"
        good, _ = request_of(1)
        assert httpx.post(url, content=good, headers=PROTOBUF, timeout=30).status_code == 200
        refused = [
            httpx.post(url, content=b"not protobuf", headers=PROTOBUF, timeout=30),
            httpx.post(url, content=json.dumps(impossible).encode(), timeout=30,
                       headers={**AUTH, "Content-Type": "application/json"}),
            httpx.post(url, content=good, headers={**AUTH, "Content-Type": "text/plain"}, timeout=30),
            httpx.post(url, content=good, headers={"Content-Type": "application/x-protobuf"}, timeout=30),
        ]
        assert [r.status_code for r in refused] == [400, 400, 415, 401]
        assert spooled_records(wh) == 1
        server.kill()


# -- (4) freshness -------------------------------------------------------------------------------

def test_spans_are_queryable_within_2_s_of_their_200(tmp_path):
    _, spans = genai_run("durable", seed=34)
    with serve(tmp_path / "wh") as server:
        exporter = ots.otlp_http_exporter(f"{server.base}/v1/traces", headers=AUTH)
        for n in range(1, len(spans) // 2 + 1):  # two spans a request, each polled for
            assert exporter.export(spans[2 * n - 2:2 * n]).name == "SUCCESS"
            answered = time.monotonic()
            while server.count("run_id = 'durable'") < 2 * n:
                assert time.monotonic() - answered < 2.0, f"request {n} not queryable 2 s after its 200"
                time.sleep(0.02)
        exporter.shutdown()


# -- the gate refusing after the 200: the quarantine ---------------------------------------------

def test_a_request_the_gate_refuses_after_its_200_goes_to_the_quarantine(tmp_path):
    wh = tmp_path / "wh"
    old = one_span_request("durable", 0x1995)  # a span of 1995: well formed, implausible to the gate
    span = old.resource_spans[0].scope_spans[0].spans[0]
    span.start_time_unix_nano, span.end_time_unix_nano = 788_918_400 * 10**9, 788_918_401 * 10**9
    fine, fine_ids = request_of(1)
    with serve(wh) as server:
        url = f"{server.base}/v1/traces"
        assert httpx.post(url, content=old.SerializeToString(), headers=PROTOBUF, timeout=30).status_code == 200
        assert httpx.post(url, content=fine, headers=PROTOBUF, timeout=30).status_code == 200
        settled(wh)
        assert sorted(stored_span_ids(wh)) == sorted(fine_ids)
    held = tw.open(wh).quarantine()
    assert held.num_rows == 1 and "ts_plausible" in json.dumps(held.to_pylist(), default=str)


# -- (5) backpressure ----------------------------------------------------------------------------

def test_a_full_spool_answers_503_with_retry_after_and_keeps_what_it_took(tmp_path):
    from fastapi.testclient import TestClient
    from google.rpc.status_pb2 import Status

    from tracewh.service.app import create_app
    from tracewh.service.config import ServiceConfig

    wh = tmp_path / "wh"
    body, _ = request_of(1)
    app = create_app(ServiceConfig(wh, token=TOKEN, otlp_spool_bytes=3 * len(body) + len(body) // 2))  # room for 3
    client = TestClient(app, base_url="http://127.0.0.1")
    taken: list[str] = []
    with writer_lock_held(wh):
        for i in range(5):
            body, ids = request_of(1 + i * SPANS_PER_REQUEST)
            answer = client.post("/v1/traces", content=body, headers=PROTOBUF)
            if answer.status_code == 200:
                taken += ids
        assert answer.status_code == 503 and answer.headers["Retry-After"] == "1"
        assert "waiting to be committed" in Status.FromString(answer.content).message
        assert len(taken) == 3 * SPANS_PER_REQUEST
    settled(wh)
    assert sorted(stored_span_ids(wh)) == sorted(taken)


# -- compaction ----------------------------------------------------------------------------------

def test_a_compaction_in_tiers_leaves_files_of_its_size_as_they_are(tmp_path):
    """The service's first tier merges only files under its size: what it merged once is not
    written again by the next one (nothing is vacuumed, so every rewrite stays on disk)."""
    from helpers import llm_call, write_native

    wh = tw.Warehouse(tmp_path / "wh")
    for n in range(3):
        wh.ingest([write_native(tmp_path / f"{n}.jsonl", [llm_call(f"r{n}", i) for i in range(3)])])
    small = 10 * max(tw.open(wh.path).store.file_sizes().values())  # every file so far is under it
    assert wh.optimize(when_over=3, target_bytes=small) is None  # 3 small files: not more than 3
    assert wh.optimize(when_over=2, target_bytes=small)["files_after"] == 1
    (merged,) = tw.open(wh.path).store.files()
    for n in range(3, 6):
        wh.ingest([write_native(tmp_path / f"{n}.jsonl", [llm_call(f"r{n}", i) for i in range(3)])])
    assert wh.optimize(when_over=2, target_bytes=os.path.getsize(merged)) is not None  # the 3 new ones
    assert merged in tw.open(wh.path).store.files()  # not rewritten: not under the tier's size
    assert tw.open(wh.path).query("select count(*) as n from llm_calls").tuples() == [(18,)]


def test_many_small_commits_are_compacted_without_changing_answers_or_old_versions(tmp_path):
    from fastapi.testclient import TestClient

    from tracewh.service.app import create_app
    from tracewh.service.config import ServiceConfig

    wh, threshold = tmp_path / "wh", 4
    client = TestClient(create_app(ServiceConfig(wh, token=TOKEN, compact_files=threshold, compact_interval_seconds=0)),
                        base_url="http://127.0.0.1")
    bodies = [request_of(1 + i * SPANS_PER_REQUEST, spans=2)[0] for i in range(12)]
    for body in bodies:  # one commit each: settled before the next is sent
        assert client.post("/v1/traces", content=body, headers=PROTOBUF).status_code == 200
        settled(wh)
    time.sleep(0.5)  # a compaction the last commit started may still be running
    files = tw.open(wh).store.files()
    assert 0 < len(files) <= threshold + 1
    # the same requests into a store that is never compacted: every answer the same
    plain = tw.Warehouse(tmp_path / "plain")
    for body in bodies:
        plain.ingest_otlp([body])
    for query in ("select event_id, kind, run_id, trace_id, span_id, seq, payload from events order by all",
                  "select * from llm_calls order by all", "select * from runs order by all"):
        assert rows(wh, query) == rows(tmp_path / "plain", query), query
    log = tw.open(wh).log()
    assert len(log) == 12  # the ledger lists the 12 batches; compaction commits are not batches
    for batch in log:  # every version a batch made still reads, with the spans it had
        assert tw.open(wh, batch.version).sql("select count(*) from events").fetchall()[0][0] >= 2


def test_a_second_service_of_the_same_store_does_not_share_its_spool(tmp_path):
    from fastapi.testclient import TestClient

    from tracewh.service.app import create_app
    from tracewh.service.config import ServiceConfig

    wh = tmp_path / "wh"
    first, second = (TestClient(create_app(ServiceConfig(wh, token=TOKEN)), base_url="http://127.0.0.1") for _ in range(2))
    body, ids = request_of(1)
    assert first.post("/v1/traces", content=body, headers=PROTOBUF).status_code == 200
    refused = second.post("/v1/traces", content=request_of(100)[0], headers=PROTOBUF)
    assert refused.status_code == 503 and b"in use by another process" in refused.content
    settled(wh)
    assert sorted(stored_span_ids(wh)) == sorted(ids)
