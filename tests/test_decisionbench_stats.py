"""DecisionBench statistics: paired bootstrap vs a slow reference, hypervolume on hand-drawn fronts, profile cards."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from helpers import tracewh

import tracewh as tw
from tracewh.analytics.bootstrap import cell_rng, mean_difference_ci
from tracewh.analytics.decisionbench_stats import paired_delta
from tracewh.analytics.pareto import hypervolume


def slow_basic_bootstrap(diffs: np.ndarray, n_boot: int, rng: np.random.Generator) -> tuple[float, float, float]:
    """The textbook loop: one resample at a time, then the basic interval."""
    theta = sum(diffs) / len(diffs)
    replicates = []
    for _ in range(n_boot):
        idx = rng.integers(0, len(diffs), size=len(diffs))
        replicates.append(sum(diffs[i] for i in idx) / len(diffs))
    replicates.sort()

    def quantile(p: float) -> float:  # linear interpolation, as numpy's default
        pos = p * (len(replicates) - 1)
        lo = int(pos)
        return replicates[lo] + (replicates[min(lo + 1, len(replicates) - 1)] - replicates[lo]) * (pos - lo)

    return theta, 2 * theta - quantile(0.975), 2 * theta - quantile(0.025)


@pytest.mark.parametrize("n, n_boot", [(7, 500), (300, 2000), (40, 5000)])
def test_vectorised_bootstrap_matches_the_slow_reference(n, n_boot):
    diffs = np.random.default_rng(n).choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=n)
    fast = mean_difference_ci(diffs, n_boot, cell_rng(3, "m", "gaia", "aware-c2"))
    slow = slow_basic_bootstrap(diffs, n_boot, cell_rng(3, "m", "gaia", "aware-c2"))
    assert fast == pytest.approx(slow, abs=1e-12)


def test_bootstrap_of_constant_differences_is_a_point():
    assert mean_difference_ci(np.full(50, 0.25), 1000, cell_rng(0)) == pytest.approx((0.25, 0.25, 0.25))


@pytest.mark.parametrize("points, ref, expected", [
    ([], 10.0, 0.0),
    ([(0.5, 2.0)], 10.0, 0.5 * 8),  # one rectangle
    ([(0.5, 2.0), (0.8, 6.0)], 10.0, 0.5 * 8 + 0.3 * 4),  # a staircase of two
    ([(0.5, 2.0), (0.4, 3.0), (0.8, 6.0)], 10.0, 0.5 * 8 + 0.3 * 4),  # a dominated point adds nothing
    ([(0.5, 2.0), (0.5, 2.0)], 10.0, 4.0),  # duplicates count once
    ([(0.9, 12.0), (0.3, 1.0)], 10.0, 0.3 * 9),  # beyond the reference cost: ignored
])
def test_hypervolume_of_hand_drawn_fronts(points, ref, expected):
    assert hypervolume(points, ref) == pytest.approx(expected)


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("home")
    tracewh("demo", "--tasks", "4", env=os.environ | {"TRACEWH_HOME": str(home)}, check=True)
    return home / "demo" / "warehouse"


def test_delta_q_pairs_tasks_with_the_baseline(demo):
    wh = tw.open(demo)
    result = paired_delta(wh, baseline="blind", n_boot=400, seed=1).pl()
    assert set(result["condition"]) == {"aware-c1", "aware-c2", "aware-c3", "aware-tool-only"}
    assert (result["ci_low"] <= result["delta_q"]).all() and (result["delta_q"] <= result["ci_high"]).all()
    row = result.filter((pl.col("model") == "gpt-5.4") & (pl.col("suite") == "gaia") & (pl.col("condition") == "aware-c2"))
    by_hand = wh.sql("""select avg(c.quality - b.quality) from dcb_tasks c join dcb_tasks b using (model, suite, task_id)
                        where c.model = 'gpt-5.4' and c.suite = 'gaia' and c.condition = 'aware-c2'
                          and b.condition = 'blind' and c.split = 'stage2' and b.split = 'stage2'""").fetchall()[0][0]
    assert row["delta_q"].item() == pytest.approx(by_hand) and row["n_pairs"].item() == 6
    again = paired_delta(wh, baseline="blind", n_boot=400, seed=1).pl()
    assert again.equals(result)  # fixed seed: reproducible


def test_stats_cli(demo):
    delta = pl.read_csv(tracewh("stats", "delta", "-w", demo, "--n-boot", "200", "-f", "csv", check=True).out.encode())
    assert {"model", "suite", "condition", "baseline", "n_pairs", "delta_q", "ci_low", "ci_high"} == set(delta.columns)
    hv = pl.read_csv(tracewh("stats", "hypervolume", "-w", demo, "--n-boot", "200", "-f", "csv", check=True).out.encode())
    assert hv.filter(pl.col("condition") == "blind")["delta_hv"].null_count() == 3
    assert hv.filter(pl.col("condition") != "blind")["delta_hv"].null_count() == 0
    assert (hv["hv"] > 0).all() and (hv["n_models"] == 6).all()


def test_profile_cards_are_deterministic(demo, tmp_path):
    tracewh("cards", "--out", tmp_path / "a", "-w", demo, check=True)
    tracewh("cards", "--out", tmp_path / "b", "-w", demo, check=True)
    a, b = sorted((tmp_path / "a").iterdir()), sorted((tmp_path / "b").iterdir())
    assert [p.name for p in a] == [p.name for p in b] and len(a) == 6
    assert all(x.read_bytes() == y.read_bytes() for x, y in zip(a, b))
    text = (tmp_path / "a" / "gpt-5.4.md").read_text()
    assert text.startswith("---\nmodel: gpt-5.4\nvariant: c2_static\ntagger_version: tracewh-sql-1\n")
    assert "suites: [bfcl, gaia, tau]" in text and "## Strengths" in text and "## Weaknesses" in text
    assert "| skill | pass % | n | avg steps | avg output tokens | $/task |" in text
    refused = tracewh("cards", "--out", tmp_path / "c", "--variant", "c3", "-w", demo)
    assert refused.code == 2 and "c2" in refused.err
