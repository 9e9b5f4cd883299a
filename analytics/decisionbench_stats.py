"""DecisionBench statistics over the views: Δq vs a baseline condition and Pareto hypervolume, with paired bootstrap CIs.

Each function takes a Warehouse and returns a DuckDB relation (so it can be queried,
joined or exported like a view): `.pl()` for Polars.
"""

from __future__ import annotations


import duckdb
import numpy as np
import pyarrow as pa

from .bootstrap import basic_interval, cell_rng, mean_difference_ci, resample_stats
from .pareto import hypervolume
from . import Queryable

DELTA_SCHEMA = pa.schema([("model", pa.string()), ("suite", pa.string()), ("condition", pa.string()),
                          ("baseline", pa.string()), ("n_pairs", pa.int64()), ("delta_q", pa.float64()),
                          ("ci_low", pa.float64()), ("ci_high", pa.float64())])
HV_SCHEMA = pa.schema([("suite", pa.string()), ("condition", pa.string()), ("n_models", pa.int64()),
                       ("ref_cost", pa.float64()), ("hv", pa.float64()), ("delta_hv", pa.float64()),
                       ("ci_low", pa.float64()), ("ci_high", pa.float64())])

# Per task: quality averaged over its attempts (τ-bench trials), evaluation splits only.
TASK_QUALITY = """
select model, suite, condition, task_id, avg(quality) as q
from dcb_tasks
where split is distinct from 'stage1' and quality is not null and condition is not null
group by all
"""


def paired_delta(wh: Queryable, baseline: str = "blind", n_boot: int = 5000, seed: int = 0,
                 level: float = 0.95) -> duckdb.DuckDBPyRelation:
    """Δq = mean over tasks of q(condition) - q(baseline), matched on task id, per model x suite x condition."""
    pairs = wh.sql(f"""
        with t as ({TASK_QUALITY})
        select c.model, c.suite, c.condition, list(c.q - b.q order by c.task_id) as diffs
        from t as c join t as b
          on b.model = c.model and b.suite = c.suite and b.task_id = c.task_id and b.condition = $baseline
        where c.condition <> $baseline
        group by all order by all""", params={"baseline": baseline}).fetchall()
    rows = []
    for model, suite, condition, diffs in pairs:
        rng = cell_rng(seed, model, suite, condition, baseline)
        delta, low, high = mean_difference_ci(np.asarray(diffs, dtype=float), n_boot, rng, level)
        rows.append({"model": model, "suite": suite, "condition": condition, "baseline": baseline,
                     "n_pairs": len(diffs), "delta_q": delta, "ci_low": low, "ci_high": high})
    return _relation(wh, rows, DELTA_SCHEMA)


def pareto_hypervolume(wh: Queryable, baseline: str = "blind", n_boot: int = 5000, seed: int = 0,
                       level: float = 0.95) -> duckdb.DuckDBPyRelation:
    """HV of the models' (mean q, mean cost) points per suite x condition; ΔHV vs baseline, bootstrap over models.

    Reference point: q = 0, cost = 1.05 x the largest mean cost of the suite (any condition).
    """
    points = wh.sql("""select suite, condition, model, mean_q, mean_cost from dcb_quality
                       where mean_cost is not null and condition is not null order by all""").fetchall()
    by_cell: dict[tuple[str, str], dict[str, tuple[float, float]]] = {}
    for suite, condition, model, q, cost in points:
        by_cell.setdefault((suite, condition), {})[model] = (q, cost)
    ref = {suite: 1.05 * max(c for (s, _), cell in by_cell.items() if s == suite for _, c in cell.values())
           for suite, _ in by_cell}
    rows = []
    for (suite, condition), cell in sorted(by_cell.items()):
        row = {"suite": suite, "condition": condition, "n_models": len(cell), "ref_cost": ref[suite],
               "hv": hypervolume(cell.values(), ref[suite]), "delta_hv": None, "ci_low": None, "ci_high": None}
        base = by_cell.get((suite, baseline))
        if condition != baseline and base:
            row |= _delta_hv(cell, base, ref[suite], n_boot, cell_rng(seed, suite, condition, baseline), level)
        rows.append(row)
    return _relation(wh, rows, HV_SCHEMA)


def _delta_hv(cell: dict, base: dict, ref_cost: float, n_boot: int, rng: np.random.Generator,
              level: float) -> dict[str, float]:
    models = sorted(set(cell) & set(base))
    ours = np.array([cell[m] for m in models])
    theirs = np.array([base[m] for m in models])
    delta = hypervolume(map(tuple, ours), ref_cost) - hypervolume(map(tuple, theirs), ref_cost)

    def statistic(idx: np.ndarray) -> np.ndarray:
        return np.array([hypervolume(map(tuple, ours[row]), ref_cost) - hypervolume(map(tuple, theirs[row]), ref_cost)
                         for row in idx])

    low, high = basic_interval(delta, resample_stats(len(models), n_boot, rng, statistic), level)
    return {"delta_hv": delta, "ci_low": float(low), "ci_high": float(high)}


def _relation(wh: Queryable, rows: list[dict], schema: pa.Schema) -> duckdb.DuckDBPyRelation:
    return wh.con.from_arrow(pa.Table.from_pylist(rows, schema=schema))
