"""The fixed cost a user feels: whole `tracewh` processes against the plainest process that
could answer instead, alternated run by run so both see the same machine.

    .venv/bin/python bench/commands.py                 # builds the demo store in a temp folder
    .venv/bin/python bench/commands.py --runs 9 --store ~/.tracewh/demo/warehouse

Rows (docs/performance.md, "Fixed cost of a command"):
  sql      `tracewh sql -w DEMO QUERY` for `select count(*) from events` and each headline view,
           against `python -c` running the count with duckdb over the store's Parquet files
           (<= 1.5x). The first query after an ingest builds the store's catalog; it is made
           before timing, as the target holds "from the second process on".
  startup  `tracewh --help`, `--version`, `views -w DEMO`, against that same plain process (<= 1.5x).
  ingest   `tracewh ingest` of a 31-event native file into a new store, quality gate on,
           against the plainest process that turns the same file into Parquet: pyarrow's own
           JSON reader to zstd Parquet, a `python -c` (PLAIN_INGEST) (<= 3x). bench/reference.py's
           process (every record through orjson, one row per record) imports more than that and
           hid part of the fixed cost (issue #34); it is shown beside, for information only.
Medians of --runs whole-process runs each, the processes of a row alternated; PASS/FAIL per
row (the informative row has no target).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
TRACEWH = [str(Path(sys.executable).with_name("tracewh"))]
HEADLINE_VIEWS = ("d52_rs_at_k", "d52_critical", "ecb_table1", "ecb_role_accuracy", "dcb_quality", "dcb_fidelity",
                  "dcb_self_preference", "dcb_ceiling")
# Both sides run with Python's default bytecode cache, as on a user's machine (pip compiles a
# package's modules at install; an editable install writes them on first run). Where the
# environment turns the cache off (PYTHONDONTWRITEBYTECODE), every run would recompile
# tracewh's own modules, a cost no user pays.
PROCESS_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
PLAIN_COUNT = ("import duckdb, sys; "
               "print(duckdb.sql(f\"select count(*) from read_parquet('{sys.argv[1]}/events/**/*.parquet')\").fetchall())")
PLAIN_INGEST = ("import sys, pyarrow.json as pj, pyarrow.parquet as pq; "
                "pq.write_table(pj.read_json(sys.argv[1]), sys.argv[2], compression='zstd')")


def wall(args: list[str]) -> float:
    """Seconds for one whole process; fails loudly if it fails."""
    started = time.perf_counter()
    done = subprocess.run(args, capture_output=True, env=PROCESS_ENV)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr.decode()}")
    return seconds


def paired(ours: list[str], theirs: list[str], runs: int, before=None) -> tuple[float, float]:
    """Medians of `ours` and `theirs`, alternated; `before()` runs untimed ahead of each pair."""
    return tuple(alternated([ours, theirs], runs, before))


def alternated(commands: list[list[str]], runs: int, before=None) -> list[float]:
    """Median of each command, run in turn `runs` times; `before()` runs untimed ahead of each round."""
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        if before:
            before()
        for command, seconds in zip(commands, times):
            seconds.append(wall(command))
    return [statistics.median(seconds) for seconds in times]


def native_lines(n: int = 31) -> bytes:
    """A small native run (tracewh-events/1): an orchestrator's LLM calls, tool calls and a score."""
    from tracewh.schema.native import dumps_event, header

    events = []
    for i in range(n - 1):
        kind = "llm_call" if i % 3 else "tool_call"
        event = {"run_id": "bench-run", "benchmark": "custom", "task_id": f"t{i // 10}", "kind": kind, "seq": i,
                 "ts": f"2026-11-01T10:{i // 60:02d}:{i % 60:02d}Z", "span_id": f"s{i}", "agent": "orchestrator"}
        if kind == "llm_call":
            event |= {"model": "gpt-5.4", "prompt_tokens": 1200 + i, "completion_tokens": 80 + i, "latency_s": 0.9,
                      "payload": {"messages": [{"role": "user", "content": f"step {i}"}], "content": "ok"}}
        else:
            event |= {"tool_name": "search", "payload": {"arguments": {"q": f"query {i}"}, "result": "found"}}
        events.append(event)
    events.append({"run_id": "bench-run", "benchmark": "custom", "task_id": "t0", "kind": "score", "seq": n - 1,
                   "score": 0.5, "payload": {"metric": "pass"}})
    return header() + b"".join(dumps_event(e) for e in events)


def measure(store: Path, work: Path, runs: int) -> list[tuple[str, float, float, float | None]]:
    """(row, ours s, theirs s, limit) for every row; limit None: informative."""
    plain = [sys.executable, "-c", PLAIN_COUNT, str(store)]
    rows = []
    wall(TRACEWH + ["sql", "-w", str(store), "select count(*) from events"])  # the catalog and bytecode, made once
    for query in ["select count(*) from events"] + [f"select * from {v}" for v in HEADLINE_VIEWS]:
        ours, theirs = paired(TRACEWH + ["sql", "-w", str(store), query], plain, runs)
        rows.append((f"tracewh sql '{query}'", ours, theirs, 1.5))
    for args in (["--help"], ["--version"], ["views", "-w", str(store)]):
        ours, theirs = paired(TRACEWH + args, plain, runs)
        rows.append((f"tracewh {' '.join(args)}", ours, theirs, 1.5))
    ours, plainest, reference = _ingest_times(work, runs)
    rows.append(("tracewh ingest (31 events, gate on)", ours, plainest, 3.0))
    rows.append(("  the same against bench/reference.py", ours, reference, None))
    return rows


def _ingest_times(work: Path, runs: int) -> list[float]:
    """Medians of `tracewh ingest` into a new store, the plainest JSON -> Parquet process and
    bench/reference.py's, on the same file, alternated."""
    source = work / "run.jsonl"
    source.write_bytes(native_lines())
    fresh, plain_out, reference_out = work / "wh", work / "plain.parquet", work / "ref.parquet"

    def empty_store() -> None:
        subprocess.run(["rm", "-rf", str(fresh), str(plain_out), str(reference_out)], check=True)

    return alternated([TRACEWH + ["ingest", str(source), "-w", str(fresh)],
                       [sys.executable, "-c", PLAIN_INGEST, str(source), str(plain_out)],
                       [sys.executable, str(BENCH / "reference.py"), str(reference_out), str(source)]], runs, empty_store)


def report(rows: list[tuple[str, float, float, float | None]]) -> bool:
    print(f"{'command':<48} {'tracewh':>9} {'plain':>9} {'ratio':>7} {'target':>8}")
    ok = True
    for name, ours, theirs, limit in rows:
        ratio = ours / theirs
        line = f"{name:<48} {ours * 1000:>7.0f}ms {theirs * 1000:>7.0f}ms {ratio:>6.2f}x"
        if limit is None:
            print(f"{line} {'-':>8}  (informative)")
            continue
        ok &= ratio <= limit
        print(f"{line} {'<= %.1fx' % limit:>8}  {'PASS' if ratio <= limit else 'FAIL'}")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="whole-process runs per command (median)")
    parser.add_argument("--store", type=Path, help="a demo store (default: `tracewh demo` into a temp folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tracewh-bench-") as tmp:
        work = Path(tmp)
        store = args.store
        if store is None:
            subprocess.run(TRACEWH + ["demo"], check=True, capture_output=True, env=os.environ | {"TRACEWH_HOME": tmp})
            store = work / "demo" / "warehouse"
        sys.exit(0 if report(measure(store.expanduser().resolve(), work, args.runs)) else 1)


if __name__ == "__main__":
    main()
