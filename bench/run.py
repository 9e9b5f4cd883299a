"""tracewh's performance benchmark: ingest and headline views against the alternatives, on the same data, in one run.

    .venv/bin/python bench/run.py --scale 0.1      # a few minutes
    .venv/bin/python bench/run.py --scale 1        # paper-sized sweeps (docs/performance.md)

Generates DecisionBench-, DELEGATE-52- and EntCollabBench-shaped runs (bench/generate.py),
then measures
  ingest   `tracewh ingest` (a subprocess, as users run it: wall time, peak RSS) against the
           physical reference: the same files parsed with orjson and written as zstd Parquet
           by pyarrow, one row per record, no validation or derivation; the native format
           (`tracewh export-events` of the same store) is ingested and compared the same way;
  views    p50/p95 of N runs of each headline view over the store, and for one view per
           benchmark the same metric (a) in DuckDB straight over the raw JSONL, (b) as a
           pandas + json script, (c) as SQL over the events held in SQLite;
  size     the store (events table on disk) against the raw JSONL.
Prints figures, ratios and PASS/FAIL per target, and writes them as JSON.
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
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import tracewh

sys.path.insert(0, str(Path(__file__).parent))
from alternatives import METRICS, duckdb_raw, load_sqlite  # noqa: E402
from generate import GENERATORS  # noqa: E402
from reference import data_files, reference_ingest  # noqa: E402

HEADLINE_VIEWS = ("d52_rs_at_k", "d52_critical", "ecb_table1", "dcb_quality", "dcb_fidelity", "dcb_self_preference",
                  "dcb_ceiling")
ADAPTER_BENCHMARKS = ("delegate52", "decisionbench", "entcollabbench")  # ingested through their own adapters
WARM_MAX_BYTES = 4e9  # inputs read once before an ingest is timed, when the page cache can hold them
SWEEP_ARCHIVES = 18  # "a sweep of 18 small DecisionBench archives" (docs/performance.md)


# ------------------------------------------------------------------------- helpers
def raw_bytes(paths: list[Path]) -> int:
    return sum(p.stat().st_size for p in data_files(paths))


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def zip_folder(folder: Path, out: Path) -> Path:
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for path in data_files([folder]):
            z.write(path, path.relative_to(folder))
    return out


def sweep_archives(roots: list[Path], out: Path) -> list[Path]:
    """One zip per run folder, for the first SWEEP_ARCHIVES folders: a sweep as labs ship it."""
    out.mkdir(parents=True, exist_ok=True)
    folders = sorted(p for root in roots for p in root.iterdir() if p.is_dir())[:SWEEP_ARCHIVES]
    return [zip_folder(folder, out / f"{folder.name}.zip") for folder in folders]


def run_measured(args: list[str]) -> tuple[float, int]:
    """(wall seconds, peak memory in bytes) of a child process; fails loudly if it fails.

    The peak is the larger of the child's high-water mark (VmHWM; rusage's ru_maxrss would also
    count the benchmark's own pages the child had before exec) and the most its process tree held
    at once: the proportional set sizes (Pss) of the child and its staging workers, summed every
    50 ms. Pss, not RSS: the workers are forks, and RSS counts the pages they share once per process."""
    started = time.perf_counter()
    with open(os.devnull, "wb") as quiet, subprocess.Popen(args, stdout=quiet, stderr=subprocess.PIPE) as proc:
        peak = 0
        while proc.poll() is None:
            tree = sum(_proc_kib(pid, "smaps_rollup", "Pss:") for pid in [proc.pid, *_descendants(proc.pid)])
            peak = max(peak, _proc_kib(proc.pid, "status", "VmHWM:"), tree)
            time.sleep(0.05)
        err = proc.stderr.read().decode()
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{err}")
    return wall, peak * 1024


def _proc_kib(pid: int, file: str, key: str) -> int:
    try:
        text = Path(f"/proc/{pid}/{file}").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in text.splitlines() if line.startswith(key)), 0)


def _descendants(pid: int) -> list[int]:
    try:
        children = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []
    return [d for c in children for d in (c, *_descendants(c))]


def timings(fn: Callable[[], Any], runs: int) -> dict[str, float]:
    """p50/p95 over `runs` calls; first_ms is the first (cold) call, included in both."""
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - started)
    return {"p50_ms": 1000 * statistics.median(seconds), "p95_ms": 1000 * float(np.percentile(seconds, 95)),
            "first_ms": 1000 * seconds[0], "runs": runs}


# ------------------------------------------------------------------------- ingest
def measure_ingest(label: str, paths: list[Path], warehouse: Path, work: Path, attrs: list[str] = ()) -> dict[str, Any]:
    if raw_bytes(paths) < WARM_MAX_BYTES:  # both sides read the files from the page cache, not just the second
        _read_through(paths)
    before = _events(warehouse)
    wall, rss = run_measured([sys.executable, "-m", "tracewh", "ingest", *map(str, paths), "-w", str(warehouse), *attrs])
    events = _events(warehouse) - before
    ref_wall, records = reference_ingest(paths, work / f"reference-{label}.parquet")
    size = raw_bytes(paths)
    return {"input_bytes": size, "records": records, "events": events, "seconds": wall, "peak_rss_bytes": rss,
            "events_per_s": events / wall, "mb_per_s": size / 1e6 / wall,
            "reference_seconds": ref_wall, "reference_mb_per_s": size / 1e6 / ref_wall, "vs_reference": ref_wall / wall}


def _read_through(paths: list[Path]) -> None:
    for path in data_files(paths):
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass


def _events(warehouse: Path) -> int:
    if not (warehouse / "events").exists():
        return 0
    return tracewh.open(warehouse).sql("select count(*) from events").fetchall()[0][0]


# ------------------------------------------------------------------------- views
def measure_views(warehouse: Path, raw: dict[str, Path], work: Path, runs: int, alt_runs: int) -> dict[str, Any]:
    """Each view on a fresh connection (as a new `tracewh sql` or notebook would), then N runs on it."""
    views = {}
    for v in HEADLINE_VIEWS:
        fresh = tracewh.open(warehouse)
        views[v] = timings(lambda: fresh.sql(f"select * from {v}").fetchall(), runs)
    wh = tracewh.open(warehouse)
    sqlite_path = work / "events.sqlite"
    sqlite_path.unlink(missing_ok=True)
    started = time.perf_counter()
    sqlite = load_sqlite(warehouse, sqlite_path)
    load_seconds = time.perf_counter() - started
    compared = {}
    for view, m in METRICS.items():
        root = raw[m["benchmark"]]
        methods = {"duckdb_raw": duckdb_raw(m["duckdb_raw"], root), "pandas_json": lambda f=m["pandas_json"], r=root: f(r),
                   "sqlite": lambda q=m["sqlite"]: sqlite.execute(q).fetchall()}
        expected = wh.sql(m["view"]).fetchall()
        compared[view] = {"view_rows": len(expected)}
        for name, fn in methods.items():
            agree = _same(expected, fn())
            compared[view][name] = {**timings(fn, alt_runs), "agrees": agree}
    return {"views": views, "alternatives": compared, "sqlite_load_seconds": load_seconds}


def _same(a: list[tuple], b: list[tuple]) -> bool:
    """Equal rows, numbers to 1e-4 (float sums in another order differ in the last digits)."""
    def norm(rows: list[tuple]) -> list[tuple]:
        return sorted(tuple(round(float(v), 4) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
                            for v in row) for row in rows)
    return len(a) == len(b) and all(x == y or all(_close(p, q) for p, q in zip(x, y)) for x, y in zip(norm(a), norm(b)))


def _close(p: Any, q: Any) -> bool:
    if isinstance(p, float) and isinstance(q, float):
        return abs(p - q) <= 1e-4 * max(1.0, abs(p))
    if p is None or q is None:
        return p is None and q is None or (isinstance(p, float) and np.isnan(p)) or (isinstance(q, float) and np.isnan(q))
    return p == q


# ------------------------------------------------------------------------- targets
def targets(result: dict[str, Any], scale: float) -> list[tuple[str, bool, str]]:
    ingest, checks = result["ingest"], []
    native = ingest["native"]["vs_reference"]
    checks.append(("native ingest >= 50% of the pyarrow reference", native >= 0.5, f"{native:.0%}"))
    for bench in (*ADAPTER_BENCHMARKS, "decisionbench_sweep"):
        r = ingest[bench]["vs_reference"]
        checks.append((f"{bench} adapter ingest >= 20% of the reference", r >= 0.2, f"{r:.0%}"))
    for view, t in result["views"].items():
        checks.append((f"{view} p50 <= 250 ms", t["p50_ms"] <= 250, f"{t['p50_ms']:.0f} ms"))
    for view, alt in result["alternatives"].items():
        mine = result["views"][view]["p50_ms"]
        for name, need in (("duckdb_raw", 10), ("pandas_json", 50)):
            ratio = alt[name]["p50_ms"] / mine
            checks.append((f"{view} >= {need}x faster than {name}", ratio >= need and alt[name]["agrees"],
                           f"{ratio:.1f}x" + ("" if alt[name]["agrees"] else ", RESULTS DIFFER")))
    big = ingest["delegate52"]
    checks.append(("peak RSS <= 1.5 GB ingesting the DELEGATE-52 archive", big["peak_rss_bytes"] <= 1.5e9,
                   f"{big['peak_rss_bytes'] / 1e9:.2f} GB for a {big['input_bytes'] / 1e9:.2f} GB zip of "
                   f"{big['archive_plain_bytes'] / 1e9:.2f} GB JSONL"
                   + ("" if big["archive_plain_bytes"] >= 2e9 else " (the target is for >= 2 GB: run --scale 1)")))
    share = result["store_bytes"] / result["raw_bytes"]
    checks.append(("store <= 35% of the raw JSONL", share <= 0.35, f"{share:.1%}"))
    if scale < 1:
        checks = [(name + ("" if "ingest" in name or "store" in name or "RSS" in name else " (scale 1 target)"), ok, got)
                  for name, ok, got in checks]
    return checks


# ------------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=0.1, help="1 = the papers' sweep sizes (default 0.1)")
    parser.add_argument("--work", type=Path, default=Path(__file__).parent / "work", help="scratch folder (emptied)")
    parser.add_argument("--out", type=Path, help="JSON results (default bench/results/perf-scale<S>.json)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per headline view")
    parser.add_argument("--alt-runs", type=int, default=3, help="timed runs per alternative implementation")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    out = args.out or Path(__file__).parent / "results" / f"perf-scale{args.scale:g}.json"
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)

    print(f"generating runs at scale {args.scale:g} in {args.work} ...", flush=True)
    started = time.perf_counter()
    raw = {name: gen(args.work / "raw", args.scale, args.seed) for name, gen in GENERATORS.items()}
    print(f"  generated in {time.perf_counter() - started:.0f} s", flush=True)
    d52_zip = zip_folder(raw["delegate52"][0], args.work / "delegate52-relays.zip")

    warehouse, result = args.work / "warehouse", {"scale": args.scale, "machine": _machine(), "ingest": {}}
    inputs = {"delegate52": [d52_zip], "decisionbench": raw["decisionbench"], "entcollabbench": raw["entcollabbench"]}
    for bench, paths in inputs.items():
        print(f"ingesting {bench} ...", flush=True)
        result["ingest"][bench] = measure_ingest(bench, paths, warehouse, args.work)
    result["ingest"]["delegate52"]["archive_plain_bytes"] = raw_bytes(raw["delegate52"])
    print(f"ingesting a sweep of {SWEEP_ARCHIVES} small DecisionBench archives ...", flush=True)
    result["ingest"]["decisionbench_sweep"] = measure_ingest(
        "decisionbench-sweep", sweep_archives(raw["decisionbench"], args.work / "sweep"), args.work / "warehouse-sweep",
        args.work)
    native = args.work / "native.jsonl"
    subprocess.run([sys.executable, "-m", "tracewh", "export-events", str(native), "-w", str(warehouse)], check=True,
                   capture_output=True)
    print("ingesting the native format ...", flush=True)
    result["ingest"]["native"] = measure_ingest("native", [native], args.work / "warehouse-native", args.work)
    result["raw_bytes"] = sum(raw_bytes(p) for p in raw.values())
    result["store_bytes"] = folder_bytes(warehouse / "events")

    print("timing views and alternatives ...", flush=True)
    roots = {name: paths[0] if name != "entcollabbench" else paths[0].parent for name, paths in raw.items()}
    result |= measure_views(warehouse, roots, args.work, args.runs, args.alt_runs)
    result["targets"] = [{"target": n, "pass": ok, "measured": got} for n, ok, got in targets(result, args.scale)]
    report(result)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"\nwrote {out}")


def _machine() -> dict[str, Any]:
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "tracewh": tracewh.__version__,
            "platform": platform.platform()}


def report(r: dict[str, Any]) -> None:
    print(f"\n== ingest (scale {r['scale']:g}) ==")
    print(f"{'input':<16}{'MB':>9}{'events':>11}{'s':>8}{'ev/s':>10}{'MB/s':>8}{'ref MB/s':>10}{'vs ref':>8}{'RSS MB':>8}")
    for name, i in r["ingest"].items():
        print(f"{name:<16}{i['input_bytes'] / 1e6:>9.1f}{i['events']:>11,}{i['seconds']:>8.1f}{i['events_per_s']:>10,.0f}"
              f"{i['mb_per_s']:>8.1f}{i['reference_mb_per_s']:>10.1f}{i['vs_reference']:>8.2f}{i['peak_rss_bytes'] / 1e6:>8.0f}")
    print(f"store {r['store_bytes'] / 1e6:.1f} MB for {r['raw_bytes'] / 1e6:.1f} MB of raw JSONL "
          f"({r['store_bytes'] / r['raw_bytes']:.1%})")
    print("\n== headline views (ms) ==")
    for view, t in r["views"].items():
        print(f"{view:<22} p50 {t['p50_ms']:>8.1f}   p95 {t['p95_ms']:>8.1f}   first (cold connection) {t['first_ms']:>8.1f}")
    print("\n== the same metric computed otherwise (p50 ms, and how much slower than the view) ==")
    for view, alt in r["alternatives"].items():
        mine = r["views"][view]["p50_ms"]
        cells = "   ".join(f"{k} {v['p50_ms']:.0f} ({v['p50_ms'] / mine:.1f}x{'' if v['agrees'] else ', DIFFERS'})"
                           for k, v in alt.items() if isinstance(v, dict))
        print(f"{view:<14} {cells}")
    print(f"(SQLite load of the events: {r['sqlite_load_seconds']:.1f} s, not counted)")
    print("\n== targets ==")
    for t in r["targets"]:
        print(f"{'PASS' if t['pass'] else 'FAIL'}  {t['target']}: {t['measured']}")


if __name__ == "__main__":
    main()
