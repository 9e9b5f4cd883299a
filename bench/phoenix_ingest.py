"""One default OpenTelemetry SDK exporter into Phoenix and into tracewh, side by side (issue #34).

    .venv/bin/python bench/phoenix_ingest.py --install-phoenix   # first time: makes bench/work/phoenix-venv
    .venv/bin/python bench/phoenix_ingest.py                     # skips Phoenix if it is not installed there

The same measurement for both: `--spans` (12,000) GenAI agent spans (tests/otel_spans.py) ended
into one BatchSpanProcessor with the SDK's defaults (512-span requests, one at a time) and the
SDK's OTLPSpanExporter, in one process, timed from the first export call until the receiver's own
query API counts every span. tracewh: bench/otel_ingest.py's one-exporter run, into an empty store
and into a copy of the scale-1 benchmark store (POST /sql counts them). Phoenix (`phoenix serve`
from its own venv, bench/work/phoenix-venv, on 127.0.0.1 with a fresh working folder, telemetry
and external resources off): into an empty project, counted by its GraphQL API (the project's
`recordCount`, polled every 0.1 s from the last answer on; tracewh's POST /sql every 20 ms). Phoenix runs
after tracewh, never at the same time: each gets the machine's two cores.

Targets: tracewh >= 5,000 spans/s and >= 30x Phoenix's rate, into both stores. Prints PASS/FAIL
and writes bench/results/phoenix.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
import otel_ingest  # noqa: E402 - also puts tests/ on the path
from otel_ingest import TimedExporter, make_spans, ots, sdk_encoding_seconds  # noqa: E402

VENV = ROOT / "work" / "phoenix-venv"
PHOENIX = VENV / "bin" / "phoenix"
TARGET_RATIO = 30
# Polled 5 times slower than tracewh's POST /sql (20 ms): each poll costs Phoenix ~40 ms of its one
# event loop, which it also ingests on; the later notice (<= 0.1 s) is negligible next to its time.
PHOENIX_POLL_S = 0.1
RECORD_COUNT = "{ projects { edges { node { name recordCount } } } }"  # spans per project (GraphQL)


def install() -> None:
    """Phoenix in a venv of its own: its dependencies never meet tracewh's."""
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(VENV / "bin" / "pip"), "install", "arize-phoenix"], check=True)


def phoenix_version() -> str:
    answer = subprocess.run([str(VENV / "bin" / "python"), "-c", "import phoenix; print(phoenix.__version__)"],
                            capture_output=True, text=True, check=True)
    return answer.stdout.strip()


class PhoenixServer:
    """`phoenix serve` on free loopback ports, its database in a temporary working folder."""

    def __enter__(self) -> str:
        from serving import free_port

        self.folder = tempfile.TemporaryDirectory(prefix="phoenix-bench-")
        port = free_port()
        env = os.environ | {"PHOENIX_WORKING_DIR": self.folder.name, "PHOENIX_HOST": "127.0.0.1",
                            "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(free_port()),
                            "PHOENIX_TELEMETRY_ENABLED": "false", "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false"}
        self.log = open(Path(self.folder.name) / "phoenix.log", "wb")  # noqa: SIM115 - closed on exit
        self.process = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdout=self.log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        for _ in range(1200):  # start-up (database migrations) takes a while: 120 s at most
            if self.process.poll() is not None:
                self.__exit__()
                sys.exit(f"phoenix serve exited {self.process.returncode}")
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    return base
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.__exit__()
        sys.exit("phoenix serve did not answer /healthz in 120 s")

    def __exit__(self, *_: Any) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()
        self.folder.cleanup()


def phoenix_spans(client: httpx.Client, base: str) -> int:
    answer = client.post(f"{base}/graphql", json={"query": RECORD_COUNT})
    if answer.status_code != 200 or answer.json().get("errors"):
        return -1
    return sum(edge["node"]["recordCount"] for edge in answer.json()["data"]["projects"]["edges"])


def phoenix_run(base: str, count: int, seed: int) -> dict[str, Any]:
    """otel_ingest.one_exporter_run's procedure against Phoenix: the same exporter, queue handling
    and flush; the count polled from Phoenix's GraphQL API instead of POST /sql."""
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    spans, calls = make_spans(count, seed=seed), []
    encode_s = sdk_encoding_seconds(spans)
    processor = BatchSpanProcessor(TimedExporter(f"{base}/v1/traces", calls))  # the SDK's defaults
    queue = processor._batch_processor._queue  # noqa: SLF001 - as otel_ingest: no span dropped by a full queue
    for span in spans:
        while len(queue) >= queue.maxlen:
            time.sleep(0.001)
        processor.on_end(span)
    processor.force_flush()
    counted_at, polls = None, 0
    with httpx.Client(timeout=60) as client:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            polls += 1
            if phoenix_spans(client, base) >= count:
                counted_at = time.monotonic()
                break
            time.sleep(PHOENIX_POLL_S)
        stored = phoenix_spans(client, base)
    processor.shutdown()
    started = min(c["started"] for c in calls)
    seconds = (counted_at or float("inf")) - started
    answer = [c["answered"] - c["started"] for c in calls]
    return {"spans": count, "stored": stored, "requests": len(calls), "failed_requests": sum(not c["ok"] for c in calls),
            "seconds": seconds, "spans_per_s": count / seconds, "polls": polls,
            "last_answer_s": max(c["answered"] for c in calls) - started,
            "answered_spans_per_s": count / (max(c["answered"] for c in calls) - started),
            "answer_p50_s": statistics.median(answer), "answer_p99_s": otel_ingest._p99(answer),
            "sdk_encoding_s": encode_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=12_000)
    parser.add_argument("--big-scale", type=float, default=1.0, help="the bigger tracewh store (bench/catalog_refresh.py)")
    parser.add_argument("--install-phoenix", action="store_true", help=f"create {VENV} with arize-phoenix first")
    args = parser.parse_args()
    if ots.MISSING:
        sys.exit(ots.MISSING)
    if args.install_phoenix and not PHOENIX.exists():
        install()
    scratch = ROOT / "work" / "phoenix-side"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    load = {"before_tracewh": os.getloadavg()[0]}
    tracewh_runs = otel_ingest.one_exporter(scratch, args.spans, args.big_scale)
    otel_ingest.report_one_exporter(tracewh_runs)
    load["before_phoenix"] = os.getloadavg()[0]
    phoenix: dict[str, Any] | None = None
    if PHOENIX.exists():
        with PhoenixServer() as base:
            phoenix = phoenix_run(base, args.spans, seed=302) | {"version": phoenix_version()}
    load["after"] = os.getloadavg()[0]
    report(tracewh_runs, phoenix, load)


def report(tracewh_runs: dict[str, Any], phoenix: dict[str, Any] | None, load: dict[str, float]) -> None:
    results: dict[str, Any] = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                               "load_average_1m": load, "tracewh": tracewh_runs, "phoenix": phoenix}
    if phoenix is None:
        print(f"Phoenix is not installed in {VENV}: run with --install-phoenix to compare; skipped")
    else:
        print(f"Phoenix {phoenix['version']}: {phoenix['spans']:,} spans in {phoenix['requests']} requests "
              f"({phoenix['failed_requests']} failed), all answered in {phoenix['last_answer_s']:.2f} s, export start -> "
              f"all counted by its GraphQL API {phoenix['seconds']:.2f} s: {phoenix['spans_per_s']:,.0f} spans/s")
        results["ratios"] = {}
        for label, run in tracewh_runs.items():
            ratio = run["spans_per_s"] / phoenix["spans_per_s"]
            ok = ratio >= TARGET_RATIO and run["spans_per_s"] >= otel_ingest.TARGET_SPANS_PER_S and not run["failed_requests"]
            results["ratios"][label] = {"ratio": ratio, "pass": ok}
            name = "empty" if label == "empty" else f"scale-{run['scale']:g}"
            print(f"tracewh ({name} store) {run['spans_per_s']:,.0f} spans/s = {ratio:.1f}x Phoenix (targets >= "
                  f"{TARGET_RATIO}x and >= {otel_ingest.TARGET_SPANS_PER_S:,} spans/s): {'PASS' if ok else 'FAIL'}")
    print(f"load average (1 min): {load}")
    out = ROOT / "results" / "phoenix.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
