"""Live load (issue #34): OTLP at a steady rate into a scale-1 store while clients query its views.

    .venv/bin/python bench/live_load.py                    # 5 minutes, the issue's target
    .venv/bin/python bench/live_load.py --seconds 20 --out /tmp/live.json   # a smoke run (about a minute)

- The store: a copy of bench/catalog_refresh.py's benchmark store at `--scale` (built once in
  bench/work/catalog-refresh/, reused), its view catalog built before the clock starts, served by
  a real `tracewh serve` with its default limits (its own process; compaction's threshold and
  interval are ServiceConfig defaults, not `serve` flags). Its log, bench/work/live/server.log,
  holds the committer's debug lines (each commit's time, each catalog's time as the committer
  waited for it, and, from its commit process, whether each catalog was derived or built from
  scratch) and, from a bench-side wrapper (SERVER below), the server's own time in catalog reads.
- Ingest: `--senders` agent processes, each ending GenAI agent spans (tests/otel_spans.py) into
  one BatchSpanProcessor with the SDK's defaults (512-span requests, 5 s delay, 2,048-span queue)
  and the SDK's OTLPSpanExporter, paced so that together they end `--rate` spans a second. Each
  sender starts a new run (tracewh.run_id) every `--run-seconds`, as a fleet of agents running
  short benchmark runs would.
- Readers: `--clients` threads, each in a closed loop over POST /sql, cycling through QUERIES
  (headline views of all three benchmarks, the run list, a count over every LLM call). The
  service keeps answers per store version (queries/result_cache.py): a client repeating a query
  before the next commit reads it from there; `--result-cache-mb 0` runs every query.
- Export to queryable: every export call that got a 200 is probed by a separate thread, which
  asks POST /sql about the call's last span id about 10 times a second; the latency is from the
  export call to the answer of the first POST /sql that counts the span.
- Files: every 10 s, the live data files of the store's latest version per partition (what a
  query reads), the Parquet files on disk (replaced files stay for older versions), the version.

Targets (issue #34) printed PASS/FAIL and written to bench/results/live_load.json: query p99
<= 1 s over all clients; export-to-queryable p99 <= 2 s; every span acknowledged is queryable
exactly once at the end (count equal, no failed export); >= 95% of the offered rate acknowledged;
the file count bounded: in every sample of the run's second half the fullest partition holds at most
2 x the service's second compaction tier (8 x ServiceConfig.compact_files, 64 files under 16 MB:
service/compaction.py; checked every ServiceConfig.compact_interval_seconds, 5 s, so a partition
can exceed it by one interval's commits).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
from otel_ingest import TOKEN, TimedExporter, ots  # noqa: E402 - also puts tests/ on the path

import tracewh  # noqa: E402
from tracewh.service.compaction import LARGE_TIER  # noqa: E402 - the compaction thresholds the service runs with
from tracewh.service.config import ServiceConfig  # noqa: E402

QUERIES = {
    "dcb_quality": "select * from dcb_quality",
    "ecb_rates": "select * from ecb_rates",
    "d52_rs_at_k": "select * from d52_rs_at_k",
    "runs": "select * from runs order by last_ts desc limit 50",
    "llm_calls": "select count(*) as n from llm_calls",
}
TARGET_QUERY_P99_S = 1.0
TARGET_QUERYABLE_P99_S = 2.0
COMPACT_FILES = ServiceConfig.compact_files * LARGE_TIER
FILE_BOUND = 2 * COMPACT_FILES
SAMPLE_EVERY_S = 10.0
PROBE_EVERY_S = 0.1
TASK_SPANS = 6  # tests/otel_spans.genai_agent_spans: 6 spans a task
CHUNK_TASKS = 50  # spans are made 300 at a time, as the sender goes

# `tracewh serve` with its debug log, written to stderr with a monotonic time (bench-side: the
# library logs commits and catalogs at debug level), and at exit the server process's calls and
# seconds in ensure_catalog (threads together: a read's wait for the catalog of its version).
# Commits and catalog builds run in the service's commit process (service/commit_process.py),
# whose log lines come without the time; this wrapper does not reach into it.
SERVER = """
import atexit, collections, logging, runpy, sys, time
class Mono(logging.Filter):
    def filter(self, record):
        record.mono = time.monotonic()
        return True
handler = logging.StreamHandler()
handler.addFilter(Mono())
handler.setFormatter(logging.Formatter("%(mono).3f %(name)s %(levelname)s %(message)s"))
logging.getLogger("tracewh").addHandler(handler)
logging.getLogger("tracewh").setLevel(logging.DEBUG)
log = logging.getLogger("tracewh.bench")
from tracewh.queries import catalog
totals = collections.defaultdict(lambda: [0, 0.0])
def timed(owner, name, label):
    inner = getattr(owner, name)
    def run(*args, **kwargs):
        started = time.monotonic()
        try:
            return inner(*args, **kwargs)
        finally:
            totals[label][0] += 1
            totals[label][1] += time.monotonic() - started
    setattr(owner, name, run)
timed(catalog, "ensure_catalog", "ensure_catalog")
atexit.register(lambda: [log.debug("phase %s: %d calls, %.3f s", k, n, s) for k, (n, s) in totals.items()])
sys.argv = ["tracewh", *sys.argv[1:]]
runpy.run_module("tracewh", run_name="__main__")
"""


class Forward:
    """Stands in for TimedExporter's list of calls: each answered call goes to the main process at once."""

    def __init__(self, answers: Any, sender: int):
        self.answers, self.sender = answers, sender

    def append(self, call: dict[str, Any]) -> None:
        self.answers.put({"sender": self.sender, "started": call["started"], "answered": call["answered"],
                          "ok": call["ok"], "spans": len(call["span_ids"]), "marker": call["span_ids"][-1]})


def sender(index: int, endpoint: str, rate: float, offset: float, seconds: float, run_seconds: float, tag: str,
           go: Any, answers: Any, ready: Any) -> None:
    """One agent process: spans ended at `rate` a second for `seconds` into one default
    BatchSpanProcessor, from `offset` seconds after `go` (independent agents' batches do not align)."""
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    processor = BatchSpanProcessor(TimedExporter(endpoint, Forward(answers, index)))  # the SDK's defaults
    chunk, made = 0, _chunk(index, 0, tag, run_seconds, rate)
    ready.put(index)
    go.wait()
    started, ended = time.monotonic() + offset, 0
    while (due := started + ended / rate) < started + seconds:
        if (ahead := due - time.monotonic()) > 0:
            time.sleep(ahead)
        if not made:
            chunk += 1
            made = _chunk(index, chunk, tag, run_seconds, rate)
        processor.on_end(made.pop())
        ended += 1
    processor.shutdown()  # exports what is queued, as an agent does when it stops
    answers.put({"sender": index, "done": True, "ended": ended})


def _chunk(index: int, chunk: int, tag: str, run_seconds: float, rate: float) -> list[Any]:
    """The next CHUNK_TASKS tasks of this sender, their spans in reverse (popped from the end)."""
    run = int(chunk * CHUNK_TASKS * TASK_SPANS / rate // run_seconds)
    provider, memory = ots.make_provider(benchmark="otel", run_id=f"live-{tag}-s{index}-r{run}",
                                         seed=index * 1_000_000 + chunk)  # distinct ids
    ots.genai_agent_spans(provider, tasks=[f"task-{chunk:05d}-{i:02d}" for i in range(CHUNK_TASKS)], t0_ns=time.time_ns())
    spans = list(memory.get_finished_spans())
    provider.shutdown()
    return spans[::-1]


class Clients:
    """`count` threads querying QUERIES through POST /sql in a closed loop until stopped."""

    def __init__(self, base: str, count: int):
        self.base, self.stop = base, threading.Event()
        self.samples: list[tuple[str, float, float, int]] = []  # (query, started, seconds, status)
        self.threads = [threading.Thread(target=self._loop, args=(i,), daemon=True) for i in range(count)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join()

    def _loop(self, index: int) -> None:
        names = list(QUERIES)
        with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as client:
            n = index
            while not self.stop.is_set():
                name = names[n % len(names)]
                started = time.monotonic()
                status = client.post(f"{self.base}/sql", json={"query": QUERIES[name]}).status_code
                self.samples.append((name, started, time.monotonic() - started, status))
                n += 1


class Prober(threading.Thread):
    """Takes the senders' answered export calls as they come and asks POST /sql about each call's
    last span until it is counted (a request is committed whole, so its last span stands for it)."""

    def __init__(self, base: str, answers: Any, senders: int):
        super().__init__(daemon=True)
        self.base, self.answers, self.senders = base, answers, senders
        self.calls: list[dict[str, Any]] = []
        self.ended: dict[int, int] = {}
        self.probes: list[float] = []  # each probe's own time: a part of every latency it ends

    def pending(self) -> list[dict[str, Any]]:
        return [c for c in self.calls if c["ok"] and "seen" not in c]

    def run(self) -> None:
        with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as client:
            while len(self.ended) < self.senders or self.pending():
                self._take()
                if waiting := {c["marker"]: c for c in self.pending()}:
                    ids = ", ".join(f"'{span_id}'" for span_id in waiting)  # hex span ids from the SDK
                    asked = time.monotonic()
                    answer = client.post(f"{self.base}/sql", json={
                        "query": f"select span_id from events where benchmark = 'otel' and span_id in ({ids})"})
                    now = time.monotonic()
                    self.probes.append(now - asked)
                    if answer.status_code == 200:
                        for row in answer.json()["rows"]:
                            waiting[row["span_id"] if isinstance(row, dict) else row[0]]["seen"] = now
                time.sleep(PROBE_EVERY_S)

    def _take(self) -> None:
        while not self.answers.empty():
            item = self.answers.get()
            if item.get("done"):
                self.ended[item["sender"]] = item["ended"]
            else:
                self.calls.append(item)


def file_sample(warehouse: Path, t0: float) -> dict[str, Any]:
    """The latest version's data files per partition, the Parquet files on disk, the version."""
    from tracewh.warehouse.store import Store

    store = Store(warehouse)
    per_partition = Counter(str(Path(f).parent.relative_to(warehouse / "events")) for f in store.files())
    return {"t": round(time.monotonic() - t0, 1), "version": store.version(), "live_files": sum(per_partition.values()),
            "fullest_partition": max(per_partition.values()), "otel_partitions":
                {k: v for k, v in sorted(per_partition.items()) if k.startswith("benchmark=otel")},
            "files_on_disk": sum(1 for _ in (warehouse / "events").glob("benchmark=*/kind=*/*.parquet")),
            "load_average_1m": os.getloadavg()[0]}


def prepare(scale: float, work: Path) -> tuple[Path, dict[str, Any]]:
    """A fresh copy of the benchmark store, its catalog built (the service's steady state, not a cold start)."""
    from catalog_refresh import store as benchmark_store

    source = benchmark_store(ROOT / "work" / "catalog-refresh", scale)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    warehouse = work / "wh"
    shutil.copytree(source, warehouse, ignore=shutil.ignore_patterns("_catalog", "_spool"))
    started = time.perf_counter()
    wh = tracewh.open(warehouse)
    events = wh.sql("select count(*) from events").fetchall()[0][0]
    wh.sql(QUERIES["dcb_quality"]).fetchall()
    wh.close()
    return warehouse, {"scale": scale, "events_before": events, "catalog_build_s": time.perf_counter() - started}


def start_server(warehouse: Path, log: Path, cache_mb: int) -> tuple[subprocess.Popen, str]:
    from serving import free_port

    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVER, "serve", "--port", str(port), "-w", str(warehouse),
                               "--result-cache-mb", str(cache_mb)],
                              env=os.environ | {"TRACEWH_SERVICE_TOKEN": TOKEN}, stdout=subprocess.DEVNULL,
                              stderr=open(log, "wb"))  # noqa: SIM115 - the child holds it
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        if server.poll() is not None:
            sys.exit(f"tracewh serve exited {server.returncode}: see {log}")
        try:
            httpx.get(f"{base}/health", timeout=1)
            return server, base
        except httpx.TransportError:
            time.sleep(0.1)
    sys.exit(f"tracewh serve did not answer /health in 30 s: see {log}")


def warm_up(base: str) -> None:
    """Each query once, untimed: the service's query workers start and open the catalog."""
    with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as client:
        for query in QUERIES.values():
            client.post(f"{base}/sql", json={"query": query}).raise_for_status()


def live(base: str, warehouse: Path, args: argparse.Namespace, tag: str) -> dict[str, Any]:
    """The senders, clients, prober and file sampler for `args.seconds`, then the drain and the final count."""
    context = multiprocessing.get_context("spawn")
    go, answers, ready = context.Event(), context.Queue(), context.Queue()
    each = args.rate / args.senders
    offsets = [i / args.senders * 512 / each for i in range(args.senders)]  # a fraction of a 512-span batch apart
    processes = [context.Process(target=sender, args=(i, f"{base}/v1/traces", each, offsets[i], args.seconds,
                                                      args.run_seconds, tag, go, answers, ready))
                 for i in range(args.senders)]
    for process in processes:
        process.start()
    for _ in processes:
        ready.get(timeout=300)
    clients, prober, samples = Clients(base, args.clients), Prober(base, answers, args.senders), []
    t0 = time.monotonic()
    go.set()
    clients.start()
    prober.start()
    while (now := time.monotonic()) < t0 + args.seconds + max(offsets):
        samples.append(file_sample(warehouse, t0))
        time.sleep(max(0.0, min(SAMPLE_EVERY_S - (time.monotonic() - now), t0 + args.seconds + max(offsets) - now)))
    clients.finish()
    prober.join(timeout=120)  # until every sender is done and every answered call counted
    for process in processes:
        process.join(timeout=60)
    samples.append(file_sample(warehouse, t0))
    final = final_count(base, tag)
    return {"t0": t0, "clients": clients.samples, "calls": prober.calls, "ended": prober.ended, "probes": prober.probes,
            "prober_done": not prober.is_alive(), "samples": samples,
            "queryable_at_end": final["n"] if isinstance(final, dict) else final[0],
            "distinct_span_ids_at_end": final["ids"] if isinstance(final, dict) else final[1]}


def final_count(base: str, tag: str) -> Any:
    """The run's events and distinct span ids, once POST /sql answers (retried: a busy server may time a query out)."""
    query = f"select count(*) as n, count(distinct span_id) as ids from events where run_id like 'live-{tag}-%'"
    with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as client:
        for _ in range(10):
            answer = client.post(f"{base}/sql", json={"query": query})
            if answer.status_code == 200:
                return answer.json()["rows"][0]
            time.sleep(1)
    return {"n": None, "ids": None}


def _pct(values: list[float], p: int) -> float:
    if not values:
        return float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1] if len(values) > 1 else values[0]


def server_phases(log: Path, t0: float) -> dict[str, Any]:
    """Commits, catalog builds and compactions, from the server's log (times from the clock start)."""
    commits, catalogs, fulls, compactions, errors = [], [], [], [], []
    for line in log.read_text(errors="replace").splitlines():
        if m := re.match(r"([\d.]+) tracewh\.otlp DEBUG committed (\d+) requests, (\d+) spans .* in ([\d.]+) s", line):
            commits.append((float(m[1]) - t0, int(m[3]), float(m[4])))
        elif m := re.match(r"([\d.]+) tracewh\.otlp DEBUG built the newest version's catalog in ([\d.]+) s", line):
            catalogs.append((float(m[1]) - t0, float(m[2])))
        elif m := re.search(r"tracewh\.catalog DEBUG catalog (v\d+)\S* built from scratch in ([\d.]+) s", line):
            fulls.append((m[1], float(m[2])))  # the commit process's lines: no time; the store's catalog was built before
        elif m := re.match(r"([\d.]+) tracewh\.compaction INFO compacted (\d+) data files into (\d+)", line):
            compactions.append({"t": round(float(m[1]) - t0, 1), "files_before": int(m[2]), "files_after": int(m[3])})
        elif " ERROR " in line or "Traceback" in line:
            errors.append(line[:300])
    during = [c for c in commits if c[0] >= 0]

    def summary(rows: list[tuple[float, float]]) -> dict[str, Any]:
        seconds = [r[-1] for r in rows]
        return {"count": len(rows), "p50_s": _pct(seconds, 50), "p99_s": _pct(seconds, 99),
                "max_s": max(seconds, default=float("nan"))}

    phases = {m[1]: {"calls": int(m[2]), "seconds": float(m[3])} for line in log.read_text(errors="replace").splitlines()
              if (m := re.match(r"[\d.]+ tracewh\.bench DEBUG phase (.+): (\d+) calls, ([\d.]+) s", line))}
    return {"commits": summary(during) | {"spans_per_commit_p50": _pct([float(c[1]) for c in during], 50)},
            "phases_whole_server_life": phases,
            "catalog_builds": summary([c for c in catalogs if c[0] >= 0]),
            "full_catalog_builds": [{"catalog": name, "s": s} for name, s in fulls],
            "compactions": compactions, "errors": errors[:10]}


def figures(run: dict[str, Any], args: argparse.Namespace, phases: dict[str, Any]) -> dict[str, Any]:
    t0, end = run["t0"], run["t0"] + args.seconds
    queries = [q for q in run["clients"] if q[1] < end]
    latency = [q[2] for q in queries]
    ok_calls = [c for c in run["calls"] if c["ok"]]
    queryable = [c.get("seen", float("inf")) - c["started"] for c in ok_calls]
    acked = sum(c["spans"] for c in ok_calls)
    half = [s for s in run["samples"] if s["t"] >= args.seconds / 2] or run["samples"][-1:]
    slowest = sorted(queries, key=lambda q: -q[2])[:10]
    # The slowest 5% of export calls, and how many of them waited through a compaction (its log
    # line, at its end, fell between the call's start and the answer that counted its span).
    slow_calls = sorted(ok_calls, key=lambda c: c["started"] - c.get("seen", float("inf")))[:max(1, len(ok_calls) // 20)]
    compacted = [t0 + x["t"] for x in phases["compactions"]]
    return {
        "queries": {"count": len(queries), "per_s": len(queries) / args.seconds, "failed": sum(q[3] != 200 for q in queries),
                    "p50_s": _pct(latency, 50), "p95_s": _pct(latency, 95), "p99_s": _pct(latency, 99),
                    "max_s": max(latency, default=float("nan")), "over_1s": sum(x > 1 for x in latency),
                    "by_query": {name: {"count": len(xs), "p50_s": _pct(xs, 50), "p99_s": _pct(xs, 99)}
                                 for name in QUERIES if (xs := [q[2] for q in queries if q[0] == name])},
                    "slowest": [{"query": q[0], "t": round(q[1] - t0, 1), "s": round(q[2], 3), "status": q[3]}
                                for q in slowest]},
        "export": {"calls": len(run["calls"]), "failed_calls": len(run["calls"]) - len(ok_calls),
                   "spans_ended": sum(run["ended"].values()), "ended_spans_per_s": sum(run["ended"].values()) / args.seconds,
                   "spans_acked": acked, "answer_p50_s": _pct([c["answered"] - c["started"] for c in ok_calls], 50),
                   "answer_p99_s": _pct([c["answered"] - c["started"] for c in ok_calls], 99),
                   "queryable_p50_s": _pct(queryable, 50), "queryable_p95_s": _pct(queryable, 95),
                   "queryable_p99_s": _pct(queryable, 99), "queryable_max_s": max(queryable, default=float("nan")),
                   "never_seen": sum(q == float("inf") for q in queryable), "probes": len(run["probes"]),
                   "probe_p50_s": _pct(run["probes"], 50), "probe_p99_s": _pct(run["probes"], 99),
                   "slowest_5pct": {"count": len(slow_calls), "through_a_compaction": sum(
                       any(c["started"] <= t <= c.get("seen", float("inf")) for t in compacted) for c in slow_calls),
                       "calls": [{"t": round(c["started"] - t0, 1), "s": round(c.get("seen", float("inf")) - c["started"], 2)}
                                 for c in slow_calls[:10]]}},
        "spans_queryable_at_end": run["queryable_at_end"], "distinct_span_ids_at_end": run["distinct_span_ids_at_end"],
        "files": {"samples": run["samples"], "bound_per_partition": FILE_BOUND, "compact_files": COMPACT_FILES,
                  "fullest_partition_second_half": max(s["fullest_partition"] for s in half)},
        "server": phases,
    }


def verdicts(r: dict[str, Any], args: argparse.Namespace) -> dict[str, bool]:
    q, e = r["queries"], r["export"]
    return {"query_p99": q["p99_s"] <= TARGET_QUERY_P99_S and q["failed"] == 0,
            "export_to_queryable_p99": e["queryable_p99_s"] <= TARGET_QUERYABLE_P99_S,
            "files_bounded": r["files"]["fullest_partition_second_half"] <= FILE_BOUND,
            "acked_equals_queryable": (e["spans_acked"] == r["spans_queryable_at_end"] == r["distinct_span_ids_at_end"]
                                       and e["failed_calls"] == 0),
            "rate_kept": e["spans_acked"] / args.seconds >= 0.95 * args.rate}  # the SDK drops spans when its queue is full


def report(r: dict[str, Any]) -> None:
    q, e, f, s, ok = r["queries"], r["export"], r["files"], r["server"], r["pass"]
    mark = {True: "PASS", False: "FAIL"}
    print(f"\n== live load: {r['seconds']} s, {r['rate']:,.0f} spans/s from {r['senders']} SDK exporters into a "
          f"scale-{r['store']['scale']:g} store ({r['store']['events_before']:,} events), {r['clients']} query clients; "
          f"load average {r['load_average_before']:.1f} before, {r['load_average_after']:.1f} after ==")
    print(f"queries: {q['count']:,} ({q['per_s']:.1f}/s), {q['failed']} failed; p50 {q['p50_s'] * 1000:.0f} ms, "
          f"p95 {q['p95_s'] * 1000:.0f} ms, p99 {q['p99_s'] * 1000:.0f} ms, max {q['max_s']:.2f} s, {q['over_1s']} over 1 s "
          f"(target p99 <= {TARGET_QUERY_P99_S:g} s): {mark[ok['query_p99']]}")
    for name, b in q["by_query"].items():
        print(f"  {name:<12} {b['count']:6,}  p50 {b['p50_s'] * 1000:6.0f} ms  p99 {b['p99_s'] * 1000:6.0f} ms")
    print(f"export: {e['calls']:,} calls ({e['failed_calls']} failed), {e['spans_ended']:,} spans ended "
          f"({e['ended_spans_per_s']:,.0f}/s), {e['spans_acked']:,} acknowledged ({e['spans_acked'] / r['seconds']:,.0f}/s: "
          f"{mark[ok['rate_kept']]} at >= 95% of the rate), answer p50 "
          f"{e['answer_p50_s'] * 1000:.0f} ms, p99 {e['answer_p99_s'] * 1000:.0f} ms")
    print(f"export -> queryable (POST /sql): p50 {e['queryable_p50_s']:.2f} s, p95 {e['queryable_p95_s']:.2f} s, "
          f"p99 {e['queryable_p99_s']:.2f} s, max {e['queryable_max_s']:.2f} s, {e['never_seen']} never seen; "
          f"{e['probes']:,} probes, each p50 {e['probe_p50_s'] * 1000:.0f} ms, p99 {e['probe_p99_s'] * 1000:.0f} ms "
          f"(target p99 <= {TARGET_QUERYABLE_P99_S:g} s): {mark[ok['export_to_queryable_p99']]}")
    slow = e["slowest_5pct"]
    print(f"  the slowest 5% ({slow['count']} calls): {slow['through_a_compaction']} waited through a compaction; "
          + ", ".join(f"{x['s']:.2f} s at {x['t']} s" for x in slow["calls"][:5]))
    print(f"spans acknowledged {e['spans_acked']:,}, queryable at the end {r['spans_queryable_at_end']:,} "
          f"({r['distinct_span_ids_at_end']:,} distinct span ids): {mark[ok['acked_equals_queryable']]}")
    print("files every 10 s (t: live files, fullest partition, on disk, version): " + "; ".join(
        f"{x['t']:.0f}: {x['live_files']}, {x['fullest_partition']}, {x['files_on_disk']}, v{x['version']}"
        for x in f["samples"]))
    print(f"fullest partition in the second half {f['fullest_partition_second_half']} (bound 2 x the compaction tier of "
          f"{f['compact_files']} = {f['bound_per_partition']}): {mark[ok['files_bounded']]}; {len(s['compactions'])} "
          f"compactions" + ("" if s["compactions"] else " (no partition passed the threshold: too few commits to test it)"))
    c, b = s["commits"], s["catalog_builds"]
    print(f"server: {c['count']} commits (p50 {c['p50_s']:.2f} s, p99 {c['p99_s']:.2f} s, max {c['max_s']:.2f} s; "
          f"{c['spans_per_commit_p50']:.0f} spans each at p50), {b['count']} catalog builds (p50 {b['p50_s']:.2f} s, "
          f"p99 {b['p99_s']:.2f} s, max {b['max_s']:.2f} s), full builds at {s['full_catalog_builds']}, "
          f"compactions at {[x['t'] for x in s['compactions']]} s")
    print("server time by phase (whole life, all threads): " + "; ".join(
        f"{k} {v['calls']} x, {v['seconds']:.1f} s" for k, v in s["phases_whole_server_life"].items()))
    if s["errors"]:
        print("server errors:\n  " + "\n  ".join(s["errors"]))
    print("slowest queries: " + ", ".join(f"{x['query']} at {x['t']} s: {x['s']} s" for x in q["slowest"][:5]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300.0, help="how long the load lasts")
    parser.add_argument("--rate", type=float, default=1000.0, help="spans a second, all senders together")
    parser.add_argument("--senders", type=int, default=4, help="agent processes, one SDK exporter each")
    parser.add_argument("--clients", type=int, default=8, help="query clients (closed loop)")
    parser.add_argument("--run-seconds", type=float, default=60.0, help="each sender starts a new run this often")
    parser.add_argument("--scale", type=float, default=1.0, help="the benchmark store's scale (bench/catalog_refresh.py)")
    parser.add_argument("--result-cache-mb", type=int, default=64,
                        help="the service's answers kept per store version (`serve --result-cache-mb`; 0: none)")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "live_load.json", help="where the results go")
    args = parser.parse_args()
    if ots.MISSING:
        sys.exit(ots.MISSING)
    work = ROOT / "work" / "live"
    warehouse, store = prepare(args.scale, work)
    print(f"store: {store['events_before']:,} events, catalog built in {store['catalog_build_s']:.1f} s", flush=True)
    server, base = start_server(warehouse, work / "server.log", args.result_cache_mb)
    try:
        warm_up(base)
        load_before, tag = os.getloadavg()[0], f"{time.time_ns():x}"
        run = live(base, warehouse, args, tag)
        load_after = os.getloadavg()[0]
    finally:
        server.terminate()
        server.wait(timeout=60)
    result = {"seconds": args.seconds, "rate": args.rate, "senders": args.senders, "clients": args.clients,
              "run_seconds": args.run_seconds, "result_cache_mb": args.result_cache_mb, "store": store,
              "load_average_before": load_before, "load_average_after": load_after, "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
              "queries_run": QUERIES}
    result |= figures(run, args, server_phases(work / "server.log", run["t0"]))
    result["pass"] = verdicts(result, args)
    out = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    report(result)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
