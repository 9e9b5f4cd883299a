"""Figures for papers, each drawn from one view (and an optional SQL filter) with matplotlib.

    rs-curves        DELEGATE-52 RS@k per model (Table 1 as lines)          d52_rs_at_k
    critical-curves  share of relays with a critical error by k            d52_critical_by_k
    pareto           quality vs cost per suite, one frontier per condition dcb_quality
    vendor-flow      vendor x vendor delegation shares (heatmap)           dcb_vendor_flow
    role-accuracy    EntCollabBench accuracy per role and model (bars)     ecb_role_accuracy
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

from ..errors import UsageError  # noqa: E402
from . import Queryable


def _rows(wh: Queryable, view: str, where: str | None) -> pl.DataFrame:
    frame = wh.sql(f"select * from {view}" + (f" where {where}" if where else "")).pl()
    if frame.is_empty():
        raise UsageError(f"{view} has no rows{' matching ' + where if where else ''}: nothing to plot")
    return frame


def _cells(frame: pl.DataFrame, row: str, column: str, value: str) -> dict[tuple[Any, Any], Any]:
    """(row, column) -> value, for grids and grouped bars."""
    return {(r, c): v for r, c, v in frame.select(row, column, value).iter_rows()}


def _lines(frame: pl.DataFrame, y: str, ylabel: str, title: str) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for (model, mode, distractors), group in frame.sort("k").group_by(["model", "mode", "distractors"], maintain_order=True):
        label = model + ("" if mode == "direct" else f" ({mode})") + ("" if distractors else " no distractors")
        ax.plot(group["k"], group[y], marker="o", markersize=3, label=label)
    ax.set(xlabel="interactions k", ylabel=ylabel, title=title)
    ax.set_xticks(sorted(frame["k"].unique().to_list()))  # the k measured, not 2.5, 5, 7.5
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return fig


def rs_curves(wh: Queryable, where: str | None) -> plt.Figure:
    return _lines(_rows(wh, "d52_rs_at_k", where), "rs", "reconstruction score RS@k", "Degradation over delegated edits")


def critical_curves(wh: Queryable, where: str | None) -> plt.Figure:
    return _lines(_rows(wh, "d52_critical_by_k", where), "pct_runs_with_critical", "relays with a critical error (%)",
                  "Cumulative critical errors")


def _frontier(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """(cost, quality) points not dominated by a cheaper, better one, by cost."""
    front, best = [], float("-inf")
    for cost, quality in sorted(points):
        if quality > best:
            front.append((cost, quality))
            best = quality
    return front


def pareto(wh: Queryable, where: str | None) -> plt.Figure:
    frame = _rows(wh, "dcb_quality", where).filter(pl.col("mean_cost").is_not_null())
    suites = sorted(frame["suite"].unique().to_list())
    conditions = sorted(frame["condition"].unique().to_list())
    colours = dict(zip(conditions, plt.rcParams["axes.prop_cycle"].by_key()["color"] * len(conditions)))
    # Two panels a row at most: a row of four suites, scaled to a page's width, was unreadable.
    columns = min(len(suites), PANELS_PER_ROW)
    rows = -(-len(suites) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5.2 * columns, 4.2 * rows), squeeze=False)
    for ax, suite in zip(axes.flat, suites):
        for condition, group in frame.filter(pl.col("suite") == suite).group_by("condition", maintain_order=True):
            points = list(zip(group["mean_cost"], group["mean_q"]))
            colour = colours[condition[0]]
            ax.plot(*zip(*_frontier(points)), linestyle="--", linewidth=1.2, color=colour)
            ax.scatter(*zip(*points), s=22, color=colour, label=condition[0])
        ax.set(title=suite, xlabel="mean cost per task (USD)", ylabel="mean quality")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(suites):]:
        ax.set_visible(False)
    handles = [plt.Line2D([], [], marker="o", linestyle="--", color=colours[c], label=c) for c in conditions]
    fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=min(len(conditions), 6),
               fontsize=10, frameon=False, title="condition (points: models; dashed: Pareto frontier)")
    fig.tight_layout()
    return fig


PANELS_PER_ROW = 2


def vendor_flow(wh: Queryable, where: str | None) -> plt.Figure:
    frame = _rows(wh, "dcb_vendor_flow", where)
    rows = sorted(frame["orchestrator_vendor"].unique().to_list())
    cols = sorted(frame["peer_vendor"].unique().to_list())
    share = _cells(frame, "orchestrator_vendor", "peer_vendor", "share_pct")
    grid = [[share.get((r, c), 0.0) for c in cols] for r in rows]
    fig, ax = plt.subplots(figsize=(1.2 * len(cols) + 2.5, 0.8 * len(rows) + 1.8))
    image = ax.imshow(grid, cmap="viridis", vmin=0, vmax=100)
    ax.set_xticks(range(len(cols)), cols, rotation=30, ha="right")
    ax.set_yticks(range(len(rows)), rows)
    for i, row in enumerate(grid):
        for j, value in enumerate(row):
            ax.text(j, i, f"{value:.0f}", ha="center", va="center", color="white" if value < 60 else "black", fontsize=8)
    ax.set(xlabel="peer vendor", ylabel="orchestrator vendor", title="Delegation flow (% of row)")
    fig.colorbar(image, ax=ax, fraction=0.046)
    fig.tight_layout()
    return fig


def role_accuracy(wh: Queryable, where: str | None) -> plt.Figure:
    """Grouped bars: one group per role, one bar per model; single- and multi-step tasks side by side."""
    frame = _rows(wh, "ecb_role_accuracy", where)
    models = sorted(frame["model"].unique().to_list())
    panels = sorted(frame["multi"].unique().to_list())
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 3.2 * len(panels)), squeeze=False)
    for ax, multi in zip(axes[:, 0], panels):
        part = frame.filter(pl.col("multi") == multi)
        agents = sorted(part["agent"].unique().to_list())
        acc = _cells(part, "model", "agent", "acc")
        width = 0.8 / len(models)
        for i, model in enumerate(models):
            xs = [j + (i - (len(models) - 1) / 2) * width for j in range(len(agents))]
            ax.bar(xs, [acc.get((model, a), 0.0) for a in agents], width, label=model)
        ax.set_xticks(range(len(agents)), [a.replace("_", " ") for a in agents], rotation=30, ha="right", fontsize=7)
        ax.set(ylabel="accuracy (%)", ylim=(0, 100), title="multi-step tasks" if multi else "single-step tasks")
        ax.grid(axis="y", alpha=0.3)
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="lower center", bbox_to_anchor=(0.5, 1.0),
               ncol=len(models), fontsize=7, frameon=False)
    fig.tight_layout()
    return fig


PLOTS: dict[str, Callable[[Queryable, str | None], plt.Figure]] = {
    "rs-curves": rs_curves, "critical-curves": critical_curves, "pareto": pareto, "vendor-flow": vendor_flow,
    "role-accuracy": role_accuracy}


def plot(wh: Queryable, kind: str, out: Path, where: str | None = None) -> Path:
    if kind not in PLOTS:
        raise UsageError(f"no plot {kind!r}; choose one of {', '.join(PLOTS)}")
    fig = PLOTS[kind](wh, where)
    fig.savefig(out, dpi=150, bbox_inches="tight")
    plt.close(fig)
    return out
