"""The HTTP service under load: a real `tracewh serve` over the demo store, on 127.0.0.1.

    .venv/bin/python bench/service_load.py                       # 50 clients x 60 s, then 45 heavy queries
    .venv/bin/python bench/service_load.py --clients 20 --seconds 10 --store ~/.tracewh/demo/warehouse

Phase 1, cheap queries: CLIENTS threads, each with its own keep-alive connection, send
requests back to back for SECONDS: POST /sql on small views, GET /runs, GET /views/<view>,
GET /health, in turn. Target: 0 errors (any status but 200, any transport error) and p99
latency <= 1 s.

Phase 2, heavy queries: 45 queries that each run until the service's time limit are sent at
once (the gate runs 4, queues the next, answers the rest 503 + Retry-After) while /health is
asked every 100 ms. Target: every /health answer within 250 ms.

The load generator runs in this process (Python threads and httpx), so it shares the
machine's cores with the server: its CPU time is reported beside the figures. Prints
PASS/FAIL per target, writes bench/results/service_load.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serving import serve  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "service_load.json"
CHEAP_P99_S = 1.0
HEALTH_MAX_S = 0.25
HEAVY_QUERIES = 45
HEAVY = "select count(*) from range(1000000000000) a"  # runs until the service's time limit
CHEAP = [("POST", "/sql", {"query": "select run_id, model, n_llm_calls, cost_usd from runs order by run_id limit 20"}),
         ("GET", "/runs?limit=20", None),
         ("POST", "/sql", {"query": "select model, count(*) as n from runs group by model order by model"}),
         ("GET", "/views/d52_rs_at_k?limit=50", None),
         ("POST", "/sql", {"query": "select * from ecb_table1"}),
         ("GET", "/health", None),
         ("POST", "/sql", {"query": "select * from dcb_quality limit 50"}),
         ("GET", "/views/runs?limit=10&benchmark=delegate52", None)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--store", type=Path, help="a demo store (default: build one in a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tracewh-load-") as tmp:
        store = args.store or demo_store(Path(tmp))
        with serve(store) as base:
            warm(base)
            load_before = os.getloadavg()
            cheap = cheap_phase(base, args.clients, args.seconds)
            heavy = heavy_phase(base)
            load_after = os.getloadavg()
    report = {"when": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": machine(),
              "load_average_before": load_before, "load_average_after": load_after,
              "clients": args.clients, "seconds": args.seconds, "cheap": cheap, "heavy": heavy}
    report["pass"] = {"cheap: 0 errors": cheap["errors"] == 0,
                      f"cheap: p99 <= {CHEAP_P99_S:g} s": cheap["latency_s"]["p99"] <= CHEAP_P99_S,
                      f"/health during heavy queries <= {HEALTH_MAX_S * 1000:g} ms":
                          heavy["health_latency_s"]["max"] <= HEALTH_MAX_S}
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print_report(report)


def demo_store(folder: Path) -> Path:
    from tracewh.demo.build import build_demo

    wh, _ = build_demo(folder / "demo")
    return wh.path


def warm(base: str) -> None:
    """Each cheap request once (the store's view catalog is built by the first query)."""
    with httpx.Client(base_url=base, timeout=120) as client:
        for method, path, body in CHEAP:
            client.request(method, path, json=body).raise_for_status()


def cheap_phase(base: str, clients: int, seconds: float) -> dict[str, Any]:
    latencies: list[float] = []
    errors: dict[str, int] = {}
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client_loop(k: int) -> None:
        with httpx.Client(base_url=base, timeout=30) as client:
            i = k
            while time.monotonic() < deadline:
                method, path, body = CHEAP[i % len(CHEAP)]
                i += 1
                outcome, took = timed(lambda: client.request(method, path, json=body))
                with lock:
                    latencies.append(took)
                    if outcome != "200":
                        kind = f"{method} {path.split('?')[0]}: {outcome}"
                        errors[kind] = errors.get(kind, 0) + 1

    cpu, started = time.process_time(), time.monotonic()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client_loop, range(clients)))
    wall = time.monotonic() - started
    return {"requests": len(latencies), "errors": sum(errors.values()), "error_kinds": errors,
            "requests_per_s": round(len(latencies) / wall, 1), "latency_s": summary(latencies),
            "load_generator_cpu_s": round(time.process_time() - cpu, 1), "wall_s": round(wall, 1)}


def heavy_phase(base: str) -> dict[str, Any]:
    health: list[float] = []
    statuses: dict[str, int] = {}
    with ThreadPoolExecutor(HEAVY_QUERIES + 1) as pool:
        queries = [pool.submit(timed, lambda: httpx.post(f"{base}/sql", json={"query": HEAVY}, timeout=120))
                   for _ in range(HEAVY_QUERIES)]
        time.sleep(0.5)  # the burst is in
        with httpx.Client(base_url=base, timeout=30) as client:
            while not all(q.done() for q in queries):
                outcome, took = timed(lambda: client.get("/health"))
                health.append(took if outcome == "200" else float("inf"))
                time.sleep(0.1)
        for q in queries:
            status = q.result()[0]
            statuses[status] = statuses.get(status, 0) + 1
    return {"heavy_queries": HEAVY_QUERIES, "statuses": statuses, "health_checks": len(health),
            "health_latency_s": summary(health)}


def timed(request: Callable[[], httpx.Response]) -> tuple[str, float]:
    """(status as text, or the transport error's name; seconds taken)."""
    started = time.perf_counter()
    try:
        outcome = str(request().status_code)
    except httpx.HTTPError as e:
        outcome = type(e).__name__
    return outcome, time.perf_counter() - started


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def pick(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 4) if ordered else float("nan")

    return {"p50": pick(0.50), "p90": pick(0.90), "p99": pick(0.99), "max": pick(1.0),
            "mean": round(statistics.fmean(ordered), 4) if ordered else float("nan")}


def machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}


def print_report(report: dict[str, Any]) -> None:
    cheap, heavy = report["cheap"], report["heavy"]
    print(f"machine: {report['machine']['cpus']} CPUs, load average {report['load_average_before'][0]:.1f} before, "
          f"{report['load_average_after'][0]:.1f} after")
    print(f"cheap: {report['clients']} clients x {report['seconds']:g} s: {cheap['requests']} requests "
          f"({cheap['requests_per_s']}/s), {cheap['errors']} errors {cheap['error_kinds'] or ''}, latency "
          f"p50 {cheap['latency_s']['p50'] * 1000:.0f} ms, p99 {cheap['latency_s']['p99'] * 1000:.0f} ms, "
          f"max {cheap['latency_s']['max'] * 1000:.0f} ms; load generator CPU {cheap['load_generator_cpu_s']} s")
    print(f"heavy: {heavy['heavy_queries']} queries at once -> {heavy['statuses']}; /health x{heavy['health_checks']}: "
          f"p50 {heavy['health_latency_s']['p50'] * 1000:.0f} ms, p99 {heavy['health_latency_s']['p99'] * 1000:.0f} ms, "
          f"max {heavy['health_latency_s']['max'] * 1000:.0f} ms")
    for target, passed in report["pass"].items():
        print(f"{'PASS' if passed else 'FAIL'}  {target}")
    print(f"written: {RESULTS}")


if __name__ == "__main__":
    main()
