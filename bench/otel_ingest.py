"""Sustained OTLP/HTTP ingest into `tracewh serve`, with the OpenTelemetry SDK's own exporter.

    .venv/bin/python bench/otel_ingest.py [--spans 100000] [--senders 8] [--paced-senders 16] [--small-requests 10000]

1. Throughput and latency. GenAI agent spans (tests/otel_spans.py: invoke_agent > chat, tools,
   an error span, 6 spans a task) are made first, then fed to `--senders` BatchSpanProcessors,
   each with its own OTLPSpanExporter (protobuf over HTTP, as an agent process sends them),
   all posting to one `tracewh serve` on 127.0.0.1. Measured: spans/s from the first export to
   the last answer, and per export call the time from the call to its answer (the server
   answers once the spans are in its write-ahead spool, #34) and to a reader seeing them (a separate Warehouse
   querying their span ids). Reference: the same spans as OTLP/JSON lines, parsed with orjson,
   one row per span and written as zstd Parquet by pyarrow, no validation or mapping.
2. Files. `--small-requests` requests of 3 spans each, from 64 threads with an exporter each,
   into a fresh store: the store's data files and commits afterwards, then after
   `tracewh optimize`, checking that every query answer and every old version stays as it was.

3. One exporter (issue #34). `--one-exporter-spans` spans (12,000) from one process through one
   BatchSpanProcessor with the SDK's defaults (512-span requests, one at a time), timed from the
   first export call to the moment POST /sql counts every span: into an empty store, and into a
   copy of the benchmark store at `--big-scale` (bench/catalog_refresh.py builds it once in
   bench/work/catalog-refresh/; scale 1 holds 1.9M events). `--one-exporter-only` runs just this.

Targets: >= 5,000 spans/s (1 and 3), p99 export-to-queryable <= 2 s. Prints PASS/FAIL and writes
bench/results/otel.json. Scratch data goes to bench/work/otel/ (removed first).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

import tracewh

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent / "tests"))  # the real-SDK span producers and the server helper
sys.path.insert(0, str(ROOT))  # catalog_refresh: the benchmark store at a scale, built once
import otel_spans as ots  # noqa: E402
from helpers import serving  # noqa: E402

TOKEN = "bench-token"
TARGET_SPANS_PER_S = 5000
TARGET_P99_S = 2.0
SDK_BATCH = 512  # the SDK's default max_export_batch_size, used for the paced run
# An exporter waits for each answer (which came after the commit before #34, and now after the
# spool's fsync): the run that measures the server's capacity sends larger batches
# (OTEL_BSP_MAX_EXPORT_BATCH_SIZE, as a high-volume sender would be configured).
CAPACITY_BATCH = 2048
# An exporter also waits for each answer at the paced rate: one sender delivers at most a 512-span
# batch per commit-and-answer time (~1 s under this load), so 8 senders at 625 spans/s each fell
# behind their pace (3,785 spans/s achieved). The paced run spreads the same 5,000 spans/s over
# more agent processes, each with the SDK's defaults, as a fleet of agents would send them.
PACED_SENDERS = 16
SMALL_SENDERS = 64
SPANS_PER_SMALL_REQUEST = 3


def make_spans(count: int, seed: int) -> list[Any]:
    """Finished GenAI agent spans (6 a task), made before anything is timed."""
    provider, memory = ots.make_provider(benchmark="otel", run_id=f"bench-{seed}", seed=seed)
    ots.genai_agent_spans(provider, tasks=[f"task-{i:06d}" for i in range((count + 5) // 6)], t0_ns=time.time_ns())
    spans = memory.get_finished_spans()[:count]
    provider.shutdown()
    return list(spans)


class TimedExporter:
    """The SDK's OTLPSpanExporter, each export call timed (time.monotonic is one clock for every process)."""

    def __init__(self, endpoint: str, calls: list[dict[str, Any]]):
        self.inner = ots.otlp_http_exporter(endpoint, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
        self.calls = calls

    def export(self, spans: Sequence[Any]) -> Any:
        started = time.monotonic()
        result = self.inner.export(spans)
        self.calls.append({"started": started, "answered": time.monotonic(), "ok": result.name == "SUCCESS",
                           "span_ids": [format(s.context.span_id, "016x") for s in spans]})
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def sender(index: int, count: int, endpoint: str, rate: float | None, offset: float, batch: int, seed: int,
           go: Any, results: Any) -> None:
    """One agent process: its spans made first, then ended into the SDK's BatchSpanProcessor once
    `go` is set: all at once, or `rate` spans a second (each sender a fraction of a batch period
    later than the one before, as independent processes would be)."""
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    spans = make_spans(count, seed=seed + index)
    calls: list[dict[str, Any]] = []
    # The queue holds every span: an unpaced run must measure the server, not the SDK dropping spans.
    processor = BatchSpanProcessor(TimedExporter(endpoint, calls), max_queue_size=count + 1, max_export_batch_size=batch)
    results.put(("ready", index))
    go.wait()
    started = time.monotonic() + offset
    for i, span in enumerate(spans):
        if rate and (ahead := started + i / rate - time.monotonic()) > 0:
            time.sleep(ahead)
        processor.on_end(span)
    processor.shutdown()  # drains the queue: every span exported (or failed) on return
    results.put(("calls", calls))


class Reader(threading.Thread):
    """Another reader of the store: polls its latest version and notes when each span id first
    appears in the files the Delta log lists (what every query of that version reads)."""

    def __init__(self, warehouse: Path, every_s: float = 0.05):
        super().__init__(daemon=True)
        self.warehouse, self.every_s = warehouse, every_s
        self.first_seen: dict[str, float] = {}
        self.done = threading.Event()

    def run(self) -> None:
        import duckdb

        from tracewh.warehouse.layout import latest_version
        from tracewh.warehouse.sqltext import literal_list
        from tracewh.warehouse.store import Store

        read, version = set(), None
        while not self.done.is_set():
            now, latest = time.monotonic(), latest_version(self.warehouse / "events")
            if latest != version:
                files = [f for f in Store(self.warehouse).files(latest) if f not in read]
                if files:
                    ids = duckdb.sql(f"select span_id from read_parquet({literal_list(files)})").fetchall()
                    self.first_seen.update((span_id, now) for (span_id,) in ids if span_id not in self.first_seen)
                read.update(files)
                version = latest
            time.sleep(self.every_s)


def ingest_run(spans: int, senders: int, endpoint: str, warehouse: Path, rate: float | None, batch: int,
               seed: int) -> dict[str, Any]:
    """`senders` processes sending `spans` in all, unpaced or at `rate` spans/s in all, in requests of `batch` spans."""
    context = multiprocessing.get_context("spawn")
    go, results = context.Event(), context.Queue()
    each_rate = rate / senders if rate else None
    offsets = [i / senders * batch / each_rate if each_rate else 0.0 for i in range(senders)]
    processes = [context.Process(target=sender, args=(i, spans // senders, endpoint, each_rate, offsets[i], batch, seed,
                                                      go, results)) for i in range(senders)]
    for process in processes:
        process.start()
    for _ in processes:
        results.get()  # ready
    reader = Reader(warehouse)
    reader.start()
    go.set()
    calls = [call for _ in processes for call in results.get()[1]]
    for process in processes:
        process.join()
    # A 200 means spooled, not committed (#34): the reader watches until every answered span is in.
    answered, deadline = {s for c in calls if c["ok"] for s in c["span_ids"]}, time.monotonic() + 120
    while not answered <= reader.first_seen.keys() and time.monotonic() < deadline:
        time.sleep(0.05)
    reader.done.set()
    reader.join()
    return _figures(calls, reader, warehouse, senders) | {"offered_spans_per_s": rate, "batch_spans": batch}


def _figures(calls: list[dict[str, Any]], reader: Reader, warehouse: Path, senders: int) -> dict[str, Any]:
    sent = sum(len(c["span_ids"]) for c in calls)
    stored = tracewh.open(warehouse).sql("select count(*) from events where span_id in (select unnest($1))",
                                         [[s for c in calls for s in c["span_ids"]]]).fetchall()[0][0]
    start, end = min(c["started"] for c in calls), max(c["answered"] for c in calls)
    answer = [c["answered"] - c["started"] for c in calls]
    seen = [max(reader.first_seen.get(s, float("inf")) for s in c["span_ids"]) - c["started"] for c in calls]
    return {"spans": sent, "stored": stored, "senders": senders, "requests": len(calls),
            "failed_requests": sum(not c["ok"] for c in calls), "reader_saw_every_span": max(seen) < float("inf"),
            "seconds": end - start, "spans_per_s": sent / (end - start),
            # from the first export until another reader sees every span
            "queryable_spans_per_s": sent / (max(reader.first_seen.get(s, float("inf")) for c in calls
                                                 for s in c["span_ids"]) - start),
            "answer_p50_s": statistics.median(answer), "answer_p99_s": _p99(answer),
            "queryable_p50_s": statistics.median(seen), "queryable_p99_s": _p99(seen),
            "commits": len(tracewh.open(warehouse).log())}


def _p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[98] if len(values) > 1 else values[0]


def reference(count: int, scratch: Path) -> dict[str, Any]:
    """Spans made as the senders make them, as OTLP/JSON lines, parsed and written as zstd Parquet:
    no validation, no mapping."""
    spans = make_spans(count, seed=100)
    lines = scratch / "spans.otlp.jsonl"
    ots.write_otlp_json_lines(lines, ots.otlp_requests(spans, SDK_BATCH))
    started = time.perf_counter()
    rows = []
    with open(lines, "rb") as stream:
        for line in stream:
            for resource in orjson.loads(line)["resourceSpans"]:
                for scope in resource["scopeSpans"]:
                    rows += [{"trace_id": s["traceId"], "span_id": s["spanId"], "parent_span_id": s.get("parentSpanId"),
                              "name": s["name"], "start": int(s["startTimeUnixNano"]), "end": int(s["endTimeUnixNano"]),
                              "attributes": orjson.dumps(s.get("attributes", [])).decode()} for s in scope["spans"]]
    pq.write_table(pa.Table.from_pylist(rows), scratch / "spans.parquet", compression="zstd")
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "spans_per_s": len(spans) / seconds}


def small_requests(count: int, endpoint: str, warehouse: Path) -> dict[str, Any]:
    """`count` requests of a few spans, from SMALL_SENDERS threads each with its own exporter."""
    spans = make_spans(count * SPANS_PER_SMALL_REQUEST, seed=2)
    chunks = [spans[i:i + SPANS_PER_SMALL_REQUEST] for i in range(0, len(spans), SPANS_PER_SMALL_REQUEST)]
    local = threading.local()

    def send(chunk: list[Any]) -> bool:
        if not hasattr(local, "exporter"):
            local.exporter = ots.otlp_http_exporter(endpoint, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
        return local.exporter.export(chunk).name == "SUCCESS"

    started = time.perf_counter()
    with ThreadPoolExecutor(SMALL_SENDERS) as pool:
        ok = list(pool.map(send, chunks))
    return {"requests": len(chunks), "failed": ok.count(False), "spans": len(spans), "seconds": time.perf_counter() - started}


def files_on_disk(warehouse: Path) -> int:
    return sum(1 for _ in (warehouse / "events").glob("benchmark=*/kind=*/*.parquet"))


def optimize_check(warehouse: Path) -> dict[str, Any]:
    """Files before and after `tracewh optimize`; every view's answer and every old version unchanged."""
    before_files, versions = len(tracewh.open(warehouse).store.files()), tracewh.open(warehouse).version
    answers = _answers(tracewh.open(warehouse))
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tracewh", "optimize", "-w", str(warehouse)], check=True, capture_output=True)
    seconds = time.perf_counter() - started
    after = tracewh.open(warehouse)
    old_versions_read = all(tracewh.open(warehouse, v).sql("select count(*) from events").fetchall()[0][0] >= 0
                            for v in range(1, versions + 1, max(1, versions // 20)))
    return {"files_before": before_files, "files_after": len(after.store.files()), "files_on_disk_after": files_on_disk(warehouse),
            "commits": versions, "optimize_s": seconds, "answers_unchanged": _answers(after) == answers,
            "old_versions_read": old_versions_read}


def _answers(wh: Any) -> list[Any]:
    return [wh.sql(q).fetchall() for q in (
        "select kind, count(*), sum(prompt_tokens), sum(completion_tokens), count(parent_span_id) from events group by 1 order by 1",
        "select * from llm_calls order by event_id", "select * from tool_calls order by event_id",
        "select * from delegations order by event_id", "select * from runs order by run_id")]


def one_exporter_run(base: str, count: int, seed: int) -> dict[str, Any]:
    """`count` spans through one BatchSpanProcessor with the SDK's defaults, in one process: seconds
    from the first export call until POST /sql counts them all."""
    import httpx
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    spans, calls = make_spans(count, seed=seed), []
    encode_s = sdk_encoding_seconds(spans)
    processor = BatchSpanProcessor(TimedExporter(f"{base}/v1/traces", calls))  # defaults: 512 a request, queue 2,048
    queue = processor._batch_processor._queue  # noqa: SLF001 - see below
    capacity = queue.maxlen
    counted: dict[str, float] = {}

    def poll() -> None:  # until POST /sql counts every span
        query = {"query": f"select count(*) as n from events where run_id = 'bench-{seed}'"}
        with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as client:
            while True:
                answer = client.post(f"{base}/sql", json=query)
                row = answer.json()["rows"][0] if answer.status_code == 200 else None
                if row is not None and (row["n"] if isinstance(row, dict) else row[0]) >= count:
                    counted["at"] = time.monotonic()
                    return
                time.sleep(0.02)

    for span in spans:
        # The SDK drops a span ended into a full queue (2,048 by default): this agent ends its spans
        # as fast as the queue takes them, so the rate measured is the exporter's and the server's.
        while len(queue) >= capacity:
            time.sleep(0.001)
        processor.on_end(span)
    processor.force_flush()  # the last partial batch, as an agent flushes (or shuts down) when done
    # Polled from the last answer on: no span can be queryable before its request was answered,
    # and polling while the exporter sends would take the server's cores from it.
    poll()
    processor.shutdown()
    started = min(c["started"] for c in calls)
    seconds = counted.get("at", float("inf")) - started
    answer = [c["answered"] - c["started"] for c in calls]
    return {"spans": count, "requests": len(calls), "failed_requests": sum(not c["ok"] for c in calls),
            "seconds": seconds, "spans_per_s": count / seconds, "answer_p50_s": statistics.median(answer),
            "last_answer_s": max(c["answered"] for c in calls) - started,
            "answered_spans_per_s": count / (max(c["answered"] for c in calls) - started),
            "answer_p99_s": _p99(answer), "sdk_encoding_s": encode_s, "sdk_encoding_ceiling_spans_per_s": count / encode_s}


def sdk_encoding_seconds(spans: list[Any]) -> float:
    """What the exporter spends turning the spans into request bodies (the SDK's own encoder, in
    512-span batches), timed apart: the one-exporter rate cannot pass count / this, whatever the server."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    started = time.perf_counter()
    for i in range(0, len(spans), SDK_BATCH):
        encode_spans(spans[i:i + SDK_BATCH]).SerializeToString()
    return time.perf_counter() - started


def one_exporter(scratch: Path, count: int, big_scale: float) -> dict[str, Any]:
    """The one-exporter run into an empty store, then into a copy of the benchmark store at `big_scale`."""
    from catalog_refresh import store as benchmark_store

    # started once the service says it is ready to commit (a deployment's readiness probe): its
    # committer's loading (1.5-2.5 s) is the service's start, not the exporter's rate
    with serving(scratch / "one-empty", token=TOKEN, ingest_ready=True) as base:
        empty = one_exporter_run(base, count, seed=300)
    big = benchmark_store(ROOT / "work" / "catalog-refresh", big_scale)
    shutil.copytree(big, scratch / "one-big")
    events = tracewh.open(scratch / "one-big").sql("select count(*) from events").fetchall()[0][0]
    with serving(scratch / "one-big", token=TOKEN, ingest_ready=True) as base:
        into_big = one_exporter_run(base, count, seed=301)
    return {"empty": empty, "big": into_big | {"scale": big_scale, "events_before": events}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=100_000, help="spans sent as fast as the server takes them")
    # 30 s at the paced rate: the rate is counted from the first export to the last answer, which
    # includes the senders' staggered start and the last batch's commit (about 0.8 s in all); a
    # 12 s run lost 7% of its rate to them, a sustained one loses less than 3%.
    parser.add_argument("--paced-spans", type=int, default=150_000, help=f"spans sent at {TARGET_SPANS_PER_S:,}/s")
    parser.add_argument("--senders", type=int, default=8, help="agent processes sending as fast as they can")
    parser.add_argument("--paced-senders", type=int, default=PACED_SENDERS,
                        help=f"agent processes sharing the {TARGET_SPANS_PER_S:,} spans/s of the paced run")
    parser.add_argument("--small-requests", type=int, default=10_000)
    parser.add_argument("--one-exporter-spans", type=int, default=12_000)
    parser.add_argument("--big-scale", type=float, default=1.0, help="the bigger store of the one-exporter run")
    parser.add_argument("--one-exporter-only", action="store_true", help="run only the one-exporter measurement")
    args = parser.parse_args()
    if ots.MISSING:
        sys.exit(ots.MISSING)
    scratch = ROOT / "work" / "otel"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    single = one_exporter(scratch, args.one_exporter_spans, args.big_scale)
    report_one_exporter(single)
    if args.one_exporter_only:
        _write({"machine": {"cpus": _cpus(), "python": platform.python_version()}, "one_exporter": single,
                "pass": {"one_exporter": _one_exporter_ok(single)}}, "otel-one-exporter.json")
        return
    with serving(scratch / "wh", token=TOKEN) as base:
        capacity = ingest_run(args.spans, args.senders, f"{base}/v1/traces", scratch / "wh", None, CAPACITY_BATCH,
                              seed=100)
        paced = ingest_run(args.paced_spans, args.paced_senders, f"{base}/v1/traces", scratch / "wh", TARGET_SPANS_PER_S,
                           SDK_BATCH, seed=200)
    ref = reference(args.spans, scratch)
    with serving(scratch / "small", token=TOKEN) as base:
        small = small_requests(args.small_requests, f"{base}/v1/traces", scratch / "small")
    small |= optimize_check(scratch / "small")
    report(capacity, paced, ref, small, single)


OLD_ONE_EXPORTER_SPANS_PER_S = 1163  # before #34: each request answered after its own commit


def _one_exporter_ok(single: dict[str, Any]) -> bool:
    return all(run["spans_per_s"] >= TARGET_SPANS_PER_S and not run["failed_requests"] for run in single.values())


def report_one_exporter(single: dict[str, Any]) -> None:
    for label, run in (("empty store", single["empty"]),
                       (f"scale-{single['big']['scale']:g} store ({single['big']['events_before']:,} events)", single["big"])):
        print(f"one default SDK exporter into a {label}: {run['spans']:,} spans in {run['requests']} requests, "
              f"export start -> all queryable {run['seconds']:.2f} s (all answered in {run['last_answer_s']:.2f} s: "
              f"{run['answered_spans_per_s']:,.0f} spans/s): {run['spans_per_s']:,.0f} spans/s "
              f"(target >= {TARGET_SPANS_PER_S:,}; was {OLD_ONE_EXPORTER_SPANS_PER_S:,}): "
              f"{'PASS' if run['spans_per_s'] >= TARGET_SPANS_PER_S and not run['failed_requests'] else 'FAIL'}; "
              f"answer p50 {run['answer_p50_s'] * 1000:.0f} ms, p99 {run['answer_p99_s'] * 1000:.0f} ms; the SDK's "
              f"own encoding alone takes {run['sdk_encoding_s']:.2f} s (at most "
              f"{run['sdk_encoding_ceiling_spans_per_s']:,.0f} spans/s, whatever the server)")


def _write(results: dict[str, Any], name: str) -> None:
    out = ROOT / "results" / name
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {out}")


def report(capacity: dict[str, Any], paced: dict[str, Any], ref: dict[str, Any], small: dict[str, Any],
           single: dict[str, Any]) -> None:
    complete = capacity["stored"] == capacity["spans"] and paced["stored"] == paced["spans"]
    rate_ok = capacity["spans_per_s"] >= TARGET_SPANS_PER_S and complete
    latency_ok = (paced["queryable_p99_s"] <= TARGET_P99_S and paced["reader_saw_every_span"]
                  and paced["spans_per_s"] >= 0.95 * TARGET_SPANS_PER_S)
    compact_ok = small["answers_unchanged"] and small["old_versions_read"] and small["failed"] == 0
    for label, run in (("as fast as it takes them", capacity), (f"paced at {TARGET_SPANS_PER_S:,} spans/s", paced)):
        print(f"{label}: {run['spans']:,} spans ({run['stored']:,} stored) in {run['requests']} requests from "
              f"{run['senders']} processes, {run['commits']} commits so far, {run['seconds']:.1f} s: "
              f"{run['spans_per_s']:,.0f} spans/s answered, {run['queryable_spans_per_s']:,.0f} spans/s to all seen")
        print(f"  export -> answered (spooled): p50 {run['answer_p50_s']:.2f} s, p99 {run['answer_p99_s']:.2f} s; "
              f"-> seen by another reader: p50 {run['queryable_p50_s']:.2f} s, p99 {run['queryable_p99_s']:.2f} s")
    print(f"throughput {capacity['spans_per_s']:,.0f} spans/s (target >= {TARGET_SPANS_PER_S:,}): {'PASS' if rate_ok else 'FAIL'}")
    print(f"p99 export -> queryable at {TARGET_SPANS_PER_S:,} spans/s: {paced['queryable_p99_s']:.2f} s "
          f"(target <= {TARGET_P99_S} s): {'PASS' if latency_ok else 'FAIL'}")
    print(f"reference (orjson + pyarrow, OTLP/JSON lines -> Parquet): {ref['spans_per_s']:,.0f} spans/s; tracewh's "
          f"throughput is {capacity['spans_per_s'] / ref['spans_per_s']:.0%} of it")
    print(f"small requests: {small['requests']:,} x {SPANS_PER_SMALL_REQUEST} spans from {SMALL_SENDERS} threads in "
          f"{small['seconds']:.1f} s: {small['commits']} commits, {small['files_before']} data files; after "
          f"`tracewh optimize` ({small['optimize_s']:.1f} s): {small['files_after']} "
          f"({small['files_on_disk_after']} on disk, kept for old versions); answers unchanged and old versions "
          f"readable: {'PASS' if compact_ok else 'FAIL'}")
    results = {"machine": {"cpus": _cpus(), "python": platform.python_version()}, "capacity": capacity, "paced": paced,
               "reference": ref, "ratio_to_reference": capacity["spans_per_s"] / ref["spans_per_s"], "small_requests": small,
               "one_exporter": single,
               "pass": {"spans_per_s": rate_ok, "p99_queryable": latency_ok, "optimize": compact_ok,
                        "one_exporter": _one_exporter_ok(single)}}
    _write(results, "otel.json")


def _cpus() -> int:
    import os

    return os.cpu_count() or 0


if __name__ == "__main__":
    main()
