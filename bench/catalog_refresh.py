"""The first query after a commit: a new version's catalog derived from the previous one
(queries/catalog.py, docs/catalog.md) against a catalog built from scratch.

    .venv/bin/python bench/catalog_refresh.py                # scale 1 (1.9M events): ~3 minutes to generate
    .venv/bin/python bench/catalog_refresh.py --scale 0.1    # a quick look

On a store of DecisionBench, DELEGATE-52 and EntCollabBench runs generated at --scale (reused
from --work when it is there), each measured --runs times, medians printed:

- full build: the first `select * from dcb_quality` with no catalog at all (the catalog folder deleted);
- 31-event commit: the first query after an ingest of bench/commands.py's 31-event native run
  (a new run each time): the catalog derived from the previous version's;
- 1% commit: the first query after an ingest of new runs holding 1% of the store's events (copies
  of randomly chosen runs of all three benchmarks under new run and trace ids, in the native format);
- warm: the same query once the version's catalog exists.

Targets (issue #34): the 31-event commit's first query <= 4% of a full build, the 1% commit's <= 10%.
Every process on the machine shares its cores: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from commands import native_lines  # noqa: E402
from generate import GENERATORS  # noqa: E402

import tracewh  # noqa: E402
from tracewh.queries import catalog  # noqa: E402
from tracewh.schema.native import dumps_event, header  # noqa: E402

QUERY = "select * from dcb_quality"
TARGETS = {"commit_31_events": 0.04, "commit_1_percent": 0.10}


def store(work: Path, scale: float) -> Path:
    """The benchmark store at `scale`, generated and ingested once."""
    warehouse = work / f"warehouse-scale{scale:g}"
    if not (warehouse / "events").exists():
        print(f"generating and ingesting runs at scale {scale:g} in {work} ...", flush=True)
        raw = {name: GENERATORS[name](work / f"raw-scale{scale:g}", scale, 1) for name in GENERATORS}
        tracewh.open(warehouse).ingest([p for paths in raw.values() for p in paths], check=False)
        shutil.rmtree(work / f"raw-scale{scale:g}")
    return warehouse


def first_query(warehouse: Path) -> float:
    """Seconds from opening the store to the last row of QUERY, as a new `tracewh sql` process pays them."""
    started = time.perf_counter()
    tracewh.open(warehouse).sql(QUERY).fetchall()
    return time.perf_counter() - started


def full_build(warehouse: Path) -> float:
    shutil.rmtree(warehouse / catalog.FOLDER, ignore_errors=True)
    return first_query(warehouse)


def commit_31_events(warehouse: Path, work: Path, n: int) -> float:
    source = work / "commit-31.jsonl"
    source.write_bytes(native_lines().replace(b'"bench-run"', f'"bench-run-{n}-{time.time_ns()}"'.encode()))
    tracewh.open(warehouse).ingest([source], check=False)
    return first_query(warehouse)


def commit_1_percent(warehouse: Path, work: Path, n: int, rng: random.Random) -> tuple[float, int]:
    """Copies of random runs, under new run and trace ids, until they hold 1% of the store's events."""
    total = ingest_1_percent(warehouse, work, n, rng)
    return first_query(warehouse), total


def ingest_1_percent(warehouse: Path, work: Path, n: int, rng: random.Random) -> int:
    wh = tracewh.open(warehouse)
    runs = wh.sql("select run_id, n_events from runs where run_id not like '%-copy-%' order by run_id").fetchall()
    goal, picked, total = wh.sql("select count(*) from events").fetchall()[0][0] // 100, [], 0
    for run_id, events in rng.sample(runs, len(runs)):
        if total + events <= goal * 1.05:  # runs of every size, to within 5% of the goal
            picked.append(run_id)
            total += events
    relation = wh.sql(f"select * from events where run_id in ({', '.join(repr(r) for r in picked)})")
    suffix = f"-copy-{n}-{time.time_ns()}"
    source = work / "commit-1pct.jsonl"
    with open(source, "wb") as out:
        out.write(header())
        for row in relation.fetchall():
            event = dict(zip(relation.columns, row))
            for key in ("event_id", "batch_id", "schema_version", "source"):
                event.pop(key)
            event["run_id"] += suffix
            event["trace_id"] = event["trace_id"] and event["trace_id"] + suffix
            event["payload"] = json.loads(event["payload"]) if event["payload"] else None
            if isinstance(event["ts"], datetime):
                event["ts"] = event["ts"].isoformat()
            out.write(dumps_event(event))
    wh.close()
    tracewh.open(warehouse).ingest([source], check=False)
    return total


def catalog_bytes(warehouse: Path) -> int:
    newest = max((warehouse / catalog.FOLDER).glob("v*.duckdb"), key=catalog._version_of)
    return newest.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--work", type=Path, default=Path(__file__).parent / "work" / "catalog-refresh")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, help="JSON results (default bench/results/catalog-refresh-scale<S>.json)")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    warehouse = store(args.work, args.scale)
    rng = random.Random(1)

    full = [full_build(warehouse) for _ in range(args.runs)]
    full_bytes = catalog_bytes(warehouse)
    warm = [first_query(warehouse) for _ in range(args.runs)]
    small = [commit_31_events(warehouse, args.work, n) for n in range(args.runs)]
    large, copied = zip(*(commit_1_percent(warehouse, args.work, n, rng) for n in range(args.runs)))
    events = tracewh.open(warehouse).sql("select count(*) from events_raw").fetchall()[0][0]
    result = {
        "scale": args.scale, "events": events, "runs": args.runs, "query": QUERY,
        "full_build_s": statistics.median(full), "warm_s": statistics.median(warm),
        "commit_31_events_s": statistics.median(small), "commit_1_percent_s": statistics.median(large),
        "commit_1_percent_events": int(statistics.median(copied)),
        "catalog_bytes_full": full_bytes, "catalog_bytes_after_refreshes": catalog_bytes(warehouse),
        "all": {"full": full, "warm": warm, "commit_31_events": small, "commit_1_percent": list(large)},
    }
    result["targets"] = [{"target": f"{name} first query <= {limit:.0%} of a full build",
                          "ratio": result[f"{name}_s"] / result["full_build_s"],
                          "pass": result[f"{name}_s"] / result["full_build_s"] <= limit}
                         for name, limit in TARGETS.items()]
    report(result)
    out = args.out or Path(__file__).parent / "results" / f"catalog-refresh-scale{args.scale:g}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"\nwrote {out}")


def report(r: dict) -> None:
    print(f"\n== scale {r['scale']:g}: {r['events']:,} events, `{r['query']}`, medians of {r['runs']} ==")
    print(f"full build (no catalog)                      {r['full_build_s']:8.3f} s")
    print(f"warm (the version's catalog exists)          {r['warm_s']:8.3f} s")
    print(f"first query after a 31-event commit          {r['commit_31_events_s']:8.3f} s")
    print(f"first query after a 1% commit ({r['commit_1_percent_events']:,} events) "
          f"{r['commit_1_percent_s']:8.3f} s")
    print(f"catalog file: {r['catalog_bytes_full'] / 1e6:.1f} MB built from scratch, "
          f"{r['catalog_bytes_after_refreshes'] / 1e6:.1f} MB after {2 * r['runs']} refreshes")
    for t in r["targets"]:
        print(f"{t['target']:<60} {t['ratio']:6.1%}  {'PASS' if t['pass'] else 'FAIL'}")


if __name__ == "__main__":
    main()
