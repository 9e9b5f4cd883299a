"""Paired comparison of two conditions: any numeric column of a view, between the rows where
`by` = a and the rows where `by` = b, matched item by item on the `match` columns.

Rows of one group that share a match key are averaged first (τ-bench trials of a task). A key
found in one group only is unmatched: counted and listed, never silently dropped; a NULL value
is no value, so a key whose values are all NULL in a group is missing from that group.

The mean difference b - a gets the paired bootstrap CI of `tracewh stats delta`
(bootstrap.mean_difference_ci, pairs ordered by key, random stream cell_rng(seed, *rng_key, b, a)):
with rng_key = (model, suite) and the rows of that cell, `compare` and `stats delta` give the
same interval. Significance: an exact two-sided sign test on the pairs that differ, which for
0/1 scores is the exact McNemar test (a binomial test on the discordant pairs).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UsageError
from . import Queryable
from .bootstrap import cell_rng, mean_difference_ci

NUMERIC_TYPES = frozenset({"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
                           "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "BOOLEAN"})
TOP_CHANGED = 10
# Averages of the same scores summed in another order may differ in the last bits: such pairs are ties.
TIE_REL_TOL, TIE_ABS_TOL = 1e-9, 1e-12


@dataclass(frozen=True)
class Question:
    """What to compare: `column` of the rows `source` (a checked query over `view`) where `by` = a vs = b."""

    view: str
    column: str
    by: str
    a: str
    b: str
    match: tuple[str, ...] = ("task_id",)
    n_boot: int = 5000
    seed: int = 0
    rng_key: tuple[str, ...] = ()  # values naming the random stream, before b and a (see the module's docstring)
    level: float = 0.95


@dataclass
class Comparison:
    view: str
    column: str
    by: str
    a: str
    b: str
    match: list[str]
    n_pairs: int
    unmatched_a: int  # keys with a value in group a only
    unmatched_b: int
    mean_a: float
    mean_b: float
    diff: float  # mean over pairs of b - a
    ci_low: float
    ci_high: float
    level: float
    wins: int  # pairs with b > a
    ties: int
    losses: int
    test: str  # "sign", or "mcnemar" when every paired value is 0 or 1
    p_value: float | None  # None: every pair tied, nothing to test
    unmatched: list[dict[str, Any]] = field(default_factory=list)  # side, the key columns, value, runs
    changed: list[dict[str, Any]] = field(default_factory=list)  # the key columns, a, b, diff, runs_a, runs_b
    pairs: list[tuple[float, float]] = field(default_factory=list, repr=False)  # (a, b) per pair, by key
    # Every pair, by key: what `changed` holds, and, when the view has run_id and task_id, each
    # side's traces ({"run_id", "task_id"} each) so a page can open both (the web page's per-item table).
    items: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of `tracewh compare -f json`: the summary, `unmatched` and `changed`."""
        result = asdict(self)
        del result["pairs"], result["items"]
        return result


def is_numeric(kind: str) -> bool:
    """Whether a column of this DuckDB type can be compared (integers, floats, decimals, booleans)."""
    return kind in NUMERIC_TYPES or kind.startswith("DECIMAL")


def sign_test(wins: int, losses: int) -> float | None:
    """Exact two-sided binomial p-value of `wins` successes in wins + losses trials at p = 1/2:
    twice the probability of a split at least as uneven, at most 1.

    The binomial terms are summed in log space (math.lgamma, math.fsum): exact big-integer sums
    of math.comb take minutes at 100,000 pairs. Written out because numpy has no binomial CDF
    and scipy is not a runtime dependency; the tests check it against scipy.stats.binomtest."""
    n = wins + losses
    if n == 0:
        return None
    log_terms = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2)
                 for i in range(min(wins, losses) + 1)]
    top = max(log_terms)
    return min(1.0, 2 * math.exp(top) * math.fsum(math.exp(t - top) for t in log_terms))


def compare(wh: Queryable, source: str, question: Question) -> Comparison:
    """`source`: a read-only query over `question.view` (the guard has checked it), its rows to compare."""
    q = question
    has_runs, has_traces = _check_columns(wh, source, q)
    _check_groups(wh, source, q)
    rows = wh.sql(_pairing_query(source, q, has_runs, has_traces), params={"a": q.a, "b": q.b}).fetchall()
    keyed = [(dict(zip(q.match, row[:len(q.match)])), *row[len(q.match):]) for row in rows]
    paired = [r for r in keyed if r[1] is not None and r[2] is not None]
    if not paired:
        raise UsageError(f"no item of {q.view} has a {q.column} value in both groups ({q.by} = {q.a!r} and "
                         f"{q.by} = {q.b!r}) when matched on {', '.join(q.match)}: nothing to compare")
    a = np.array([r[1] for r in paired], dtype=float)
    b = np.array([r[2] for r in paired], dtype=float)
    diffs = b - a
    diff, low, high = mean_difference_ci(diffs, q.n_boot, cell_rng(q.seed, *q.rng_key, q.b, q.a), q.level)
    tied = np.isclose(b, a, rtol=TIE_REL_TOL, atol=TIE_ABS_TOL)
    wins, losses = int(((diffs > 0) & ~tied).sum()), int(((diffs < 0) & ~tied).sum())
    binary = bool(np.isin(np.concatenate([a, b]), (0.0, 1.0)).all())
    unmatched = [_unmatched(r, has_runs) for r in keyed if r[1] is None or r[2] is None]
    items = [_item(r, has_runs, has_traces) for r in paired]
    return Comparison(
        view=q.view, column=q.column, by=q.by, a=q.a, b=q.b, match=list(q.match), n_pairs=len(paired),
        unmatched_a=sum(u["side"] == "a" for u in unmatched), unmatched_b=sum(u["side"] == "b" for u in unmatched),
        mean_a=float(a.mean()), mean_b=float(b.mean()), diff=diff, ci_low=low, ci_high=high, level=q.level,
        wins=wins, ties=int(tied.sum()), losses=losses, test="mcnemar" if binary else "sign",
        p_value=sign_test(wins, losses), unmatched=unmatched, changed=_most_changed(items),
        pairs=list(zip(a.tolist(), b.tolist())), items=items)


def _check_columns(wh: Queryable, source: str, q: Question) -> tuple[bool, bool]:
    """UsageError unless the columns named are the view's and `column` is numeric; whether its
    items have runs to list (run_id, not a key column) and traces to open (run_id and task_id)."""
    relation = wh.sql(f"select * from ({source}) limit 0")
    types = dict(zip(relation.columns, map(str, relation.types)))
    for option, name in [("COLUMN", q.column), ("--by", q.by), *(("--match", m) for m in q.match)]:
        if name not in types:
            raise UsageError(f"{option}: {q.view} has no column {name!r}; its columns: {', '.join(types)}")
    if q.column in (q.by, *q.match):
        raise UsageError(f"{q.column!r} is compared: it cannot also be --by or --match")
    if q.by in q.match:
        raise UsageError(f"--by {q.by!r} tells the groups apart: it cannot also be a --match column")
    kind = types[q.column]
    if not is_numeric(kind):
        raise UsageError(f"{q.view}.{q.column} is {kind}, not a number: compare a numeric column")
    if q.a == q.b:
        raise UsageError(f"--a and --b are both {q.a!r}: compare two different values of {q.by}")
    return "run_id" in types and "run_id" not in q.match, "run_id" in types and "task_id" in types


def _check_groups(wh: Queryable, source: str, q: Question) -> None:
    """UsageError naming the group that has no rows, and the values `by` does have."""
    by = _quoted(q.by)
    found = dict(wh.sql(f"select cast({by} as varchar), count(*) from ({source}) "
                        f"where cast({by} as varchar) in ($a, $b) group by 1", params={"a": q.a, "b": q.b}).fetchall())
    for side, value in (("--a", q.a), ("--b", q.b)):
        if value not in found:
            values = [v for v, in wh.sql(f"select distinct cast({by} as varchar) as v from ({source}) "
                                         f"where {by} is not null order by v limit 20").fetchall()]
            raise UsageError(f"{side}: no row of {q.view} has {q.by} = {value!r}"
                             + (f"; its values: {', '.join(values)}" if values else " (no rows at all)"))


def _pairing_query(source: str, q: Question, has_runs: bool, has_traces: bool) -> str:
    """One row per key: the key columns, the mean of group a, of group b (NULL where the group
    has no value), each side's runs and traces ([run_id, task_id] each); ordered by key, as
    `stats delta` orders its pairs."""
    keys = [_quoted(m) for m in q.match]
    runs = "list(distinct run_id order by run_id)" if has_runs else "null::varchar[]"
    traces = ("list(distinct [cast(run_id as varchar), cast(task_id as varchar)] order by "
              "[cast(run_id as varchar), cast(task_id as varchar)]) filter (where run_id is not null and task_id is not null)"
              if has_traces else "null::varchar[][]")

    def group(param: str) -> str:
        return (f"select {', '.join(keys)}, avg(cast({_quoted(q.column)} as double)) as value, {runs} as runs, "
                f"{traces} as traces from ({source}) where cast({_quoted(q.by)} as varchar) = {param} "
                f"and {_quoted(q.column)} is not null group by all")

    joined = " and ".join(f"ga.{k} is not distinct from gb.{k}" for k in keys)
    return (f"with ga as ({group('$a')}), gb as ({group('$b')})\n"
            f"select {', '.join(f'coalesce(ga.{k}, gb.{k}) as {k}' for k in keys)}, ga.value, gb.value, "
            f"ga.runs, gb.runs, ga.traces, gb.traces from ga full join gb on {joined} "
            f"order by {', '.join(map(str, range(1, len(keys) + 1)))}")


def _unmatched(row: tuple, has_runs: bool) -> dict[str, Any]:
    key, value_a, value_b, runs_a, runs_b, _, _ = row
    side, value, runs = ("a", value_a, runs_a) if value_b is None else ("b", value_b, runs_b)
    return {"side": side, **key, "value": value} | ({"runs": runs} if has_runs else {})


def _item(row: tuple, has_runs: bool, has_traces: bool) -> dict[str, Any]:
    """One pair: its key columns, a, b, diff, each side's runs and traces (when the view has them)."""
    key, a, b, runs_a, runs_b, traces_a, traces_b = row
    item = {**key, "a": a, "b": b, "diff": b - a} | ({"runs_a": runs_a, "runs_b": runs_b} if has_runs else {})
    if has_traces:
        item |= {f"traces_{side}": [{"run_id": run, "task_id": task} for run, task in traces or []]
                 for side, traces in (("a", traces_a), ("b", traces_b))}
    return item


def ranked_items(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pairs, largest |b - a| first (key order among equals: the sort is stable)."""
    return sorted(items, key=lambda item: -abs(item["diff"]))


def _most_changed(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The TOP_CHANGED pairs with the largest |b - a|, tied pairs left out, without their traces
    (the JSON of `tracewh compare` lists runs)."""
    return [{k: v for k, v in item.items() if k not in ("traces_a", "traces_b")}
            for item in ranked_items(items)[:TOP_CHANGED] if not _tied(item["a"], item["b"])]


def _tied(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=TIE_REL_TOL, abs_tol=TIE_ABS_TOL)


def _quoted(identifier: str) -> str:
    """A column name checked against the view's columns, quoted as DuckDB quotes identifiers."""
    return '"' + identifier.replace('"', '""') + '"'


def plot_pairs(result: Comparison, out: Path) -> Path:
    """Two panels: each pair as a point (a on x, b on y; above the diagonal, b is higher) and the
    histogram of the differences b - a with their mean and CI."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    a, b = (np.array(side) for side in zip(*result.pairs))
    fig, (scatter, hist) = plt.subplots(1, 2, figsize=(10, 4.2))
    low, high = float(min(a.min(), b.min())), float(max(a.max(), b.max()))
    scatter.plot([low, high], [low, high], linestyle="--", color="grey", linewidth=1)
    scatter.scatter(a, b, s=18, alpha=0.6)
    if result.test == "mcnemar":  # 0/1 scores: four stacked points, so each corner says how many pairs it holds
        for x in (0.0, 1.0):
            for y in (0.0, 1.0):
                scatter.annotate(str(int(((a == x) & (b == y)).sum())), (x, y), textcoords="offset points",
                                 xytext=(8, 8), fontsize=10)
    scatter.set(xlabel=f"{result.column} ({result.by} = {result.a})", ylabel=f"{result.column} ({result.by} = {result.b})",
                title=f"{result.n_pairs} pairs, matched on {', '.join(result.match)}")
    hist.hist(b - a, bins=min(30, max(5, result.n_pairs // 3)), color="tab:blue", alpha=0.7)
    hist.axvline(0, color="grey", linewidth=1)
    hist.axvline(result.diff, color="tab:red", label=f"mean {result.diff:.3g}")
    hist.axvspan(result.ci_low, result.ci_high, color="tab:red", alpha=0.15, label=f"{result.level:.0%} CI")
    hist.set(xlabel=f"{result.column}: {result.b} - {result.a}", ylabel="pairs", title="Paired differences")
    hist.legend(fontsize=8)
    for ax in (scatter, hist):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=150, bbox_inches="tight")
    plt.close(fig)
    return out
