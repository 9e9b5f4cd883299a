"""`tracewh compare`: paired comparisons of two conditions, through the command line on the demo store.

The demo holds DecisionBench (every model x suite x condition, τ-bench tasks with two trials,
Stage-1 tasks only in the blind condition) and DELEGATE-52 relays (gpt-5.4 direct with and
without distractor files, the other models with distractors only)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest
from helpers import tracewh
from scipy.stats import binomtest

import tracewh as tw
from tracewh.analytics.compare import sign_test

JSON_KEYS = {"n_pairs", "unmatched_a", "unmatched_b", "mean_a", "mean_b", "diff", "ci_low", "ci_high", "wins", "ties",
             "losses", "p_value", "test", "unmatched", "changed"}


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("home")
    tracewh("demo", "--tasks", "4", env=os.environ | {"TRACEWH_HOME": str(home)}, check=True)
    return home / "demo" / "warehouse"


@pytest.fixture
def compare(run, demo):
    """`tracewh compare ARGS -f json` on the demo store, parsed."""
    return lambda *args: json.loads(run("compare", *args, "-f", "json", "-w", demo, check=True).out)


@pytest.mark.parametrize("model, suite, condition", [
    ("gpt-5.4", "bfcl", "aware-tool-only"),  # 0/1 quality per task
    ("claude-opus-4.6", "tau", "aware-c1"),  # τ-bench: two trials averaged per task first
])
def test_delta_q_of_one_cell_is_what_stats_delta_reports(demo, model, suite, condition):
    """Selecting one model x suite cell with --where and naming its random stream with --rng-key,
    compare gives stats delta's Δq and CI to the last bit: same pairs, same order, same draws.
    (Run as a user runs it, in a process of its own.)"""
    got = json.loads(tracewh(
        "compare", "dcb_tasks.quality", "--by", "condition", "--a", "blind", "--b", condition,
        "--where", f"split is distinct from 'stage1' and model = '{model}' and suite = '{suite}'",
        "--rng-key", model, "--rng-key", suite, "--n-boot", "400", "--seed", "1", "-f", "json", "-w", demo,
        check=True).out)
    cell = (tw.open(demo).paired_delta("blind", n_boot=400, seed=1).pl()
            .filter((pl.col("model") == model) & (pl.col("suite") == suite) & (pl.col("condition") == condition)))
    expected = cell.row(0, named=True)
    assert (got["n_pairs"], got["diff"], got["ci_low"], got["ci_high"]) == (
        expected["n_pairs"], expected["delta_q"], expected["ci_low"], expected["ci_high"])
    assert got["unmatched_a"] == got["unmatched_b"] == 0
    assert got["wins"] + got["ties"] + got["losses"] == got["n_pairs"]


def test_unmatched_items_are_counted_and_listed(demo, run, compare):
    """Stage-1 tasks run in the blind condition only: matched on task_id they have no partner."""
    got = compare("dcb_tasks.quality", "--by", "condition", "--a", "blind", "--b", "aware-c2", "--n-boot", "200")
    stage1 = {t for t, in tw.open(demo).sql("select distinct task_id from dcb_tasks where split = 'stage1' "
                                            "except select task_id from dcb_tasks where condition = 'aware-c2'").fetchall()}
    assert got["unmatched_a"] == len(stage1) > 0 and got["unmatched_b"] == 0
    assert {u["task_id"] for u in got["unmatched"]} == stage1 and {u["side"] for u in got["unmatched"]} == {"a"}
    assert all(u["runs"] and all("stage1-blind" in r for r in u["runs"]) for u in got["unmatched"])
    assert JSON_KEYS <= set(got)
    table = run("compare", "dcb_tasks.quality", "--by", "condition", "--a", "blind", "--b", "aware-c2",
                    "--n-boot", "200", "-w", demo, check=True).out
    assert f"Unmatched items ({len(stage1)})" in table and "Most changed (top 10 by |b - a|)" in table
    assert "airline-task-6" in table  # a Stage-1 task, by name


def test_distractors_on_delegate52_relays(demo, run, compare, tmp_path):
    """With vs without distractor files, relay by relay (same model, mode and environment):
    only gpt-5.4 direct ran both ways; the other relays are listed as unmatched."""
    args = ["d52_relays.rs_end", "--by", "distractors", "--a", "false", "--b", "true", "--match", "model,mode,env_id",
            "--n-boot", "500"]
    got = compare(*args)
    by_hand = tw.open(demo).sql("""
        select count(*), avg(b.rs_end), avg(a.rs_end), avg(b.rs_end - a.rs_end),
               count(*) filter (where b.rs_end > a.rs_end), count(*) filter (where b.rs_end < a.rs_end)
        from d52_relays a join d52_relays b using (model, mode, env_id)
        where not a.distractors and b.distractors""").fetchall()[0]
    relays_with = tw.open(demo).sql("select count(*) from d52_relays where distractors").fetchall()[0][0]
    n, mean_b, mean_a, diff, wins, losses = by_hand
    assert got["n_pairs"] == n and got["unmatched_b"] == relays_with - n and got["unmatched_a"] == 0
    assert (got["mean_a"], got["mean_b"], got["diff"]) == pytest.approx((mean_a, mean_b, diff))
    assert (got["wins"], got["losses"]) == (wins, losses)
    assert got["ci_low"] <= got["diff"] <= got["ci_high"]
    assert got["test"] == "sign" and got["p_value"] == pytest.approx(binomtest(wins, wins + losses).pvalue)
    top = got["changed"][0]
    assert abs(top["diff"]) == max(abs(c["diff"]) for c in got["changed"]) and len(got["changed"]) <= 10
    assert top["runs_a"] and top["runs_b"] and top["runs_a"] != top["runs_b"]  # both traces can be opened
    # A filter that keeps only the relays run both ways leaves nothing unmatched; same pairs, same answer
    only = compare(*args, "--where", "model = 'gpt-5.4' and mode = 'direct'")
    assert only["unmatched"] == [] and {k: only[k] for k in ("n_pairs", "diff", "ci_low", "ci_high")} == {
        k: got[k] for k in ("n_pairs", "diff", "ci_low", "ci_high")}
    figure = run("compare", *args, "--plot", tmp_path / "pairs.svg", "-w", demo, check=True)
    assert (tmp_path / "pairs.svg").read_text().lstrip().startswith("<?xml") and "pairs.svg" in figure.err


def test_mcnemar_on_zero_one_scores(demo, run, compare):
    """0/1 quality matched per model, suite and task: the exact McNemar test on the discordant pairs."""
    got = compare("dcb_tasks.quality", "--by", "condition", "--a", "blind", "--b", "aware-c2",
                  "--match", "model,suite,task_id", "--where", "suite <> 'tau'", "--n-boot", "200")
    discordant = tw.open(demo).sql("""
        select count(*) filter (where a.quality = 0 and b.quality = 1), count(*) filter (where a.quality = 1 and b.quality = 0)
        from dcb_tasks a join dcb_tasks b using (model, suite, task_id)
        where a.condition = 'blind' and b.condition = 'aware-c2' and a.suite <> 'tau'""").fetchall()[0]
    assert got["test"] == "mcnemar" and (got["wins"], got["losses"]) == discordant
    assert got["p_value"] == pytest.approx(binomtest(discordant[0], sum(discordant)).pvalue, rel=1e-12)
    csv = run("compare", "dcb_tasks.quality", "--by", "condition", "--a", "blind", "--b", "aware-c2", "--match",
                  "model,suite,task_id", "--where", "suite <> 'tau'", "--n-boot", "200", "-f", "csv", "-w", demo,
                  check=True).out
    row = pl.read_csv(csv.encode()).row(0, named=True)
    assert (row["test"], row["wins"], row["p_value"]) == ("mcnemar", got["wins"], got["p_value"])


@pytest.mark.parametrize("wins, losses", [(0, 1), (3, 0), (7, 3), (10, 10), (40, 61), (0, 400), (1234, 1300), (49_000, 51_000)])
def test_sign_test_is_the_exact_binomial_test(wins, losses):
    assert sign_test(wins, losses) == pytest.approx(binomtest(wins, wins + losses).pvalue, rel=1e-9)


def test_a_boolean_column_and_every_pair_tied(demo, run, compare):
    """A boolean compares as 0/1 (McNemar); when every pair ties there is nothing to test: p is n/a, not 1."""
    args = ["--by", "distractors", "--a", "false", "--b", "true", "--match", "model,mode,env_id", "--n-boot", "200"]
    complete = compare("d52_relays.complete", *args)
    assert complete["test"] == "mcnemar" and complete["n_pairs"] == 16
    tied = compare("d52_relays.round_trips", *args, "--where", "round_trips = 10")
    assert tied["ties"] == tied["n_pairs"] > 0 and tied["p_value"] is None and tied["diff"] == 0
    table = run("compare", "d52_relays.round_trips", *args, "--where", "round_trips = 10", "-w", demo, check=True).out
    assert "n/a (every pair tied)" in table and "Most changed" not in table


@pytest.mark.parametrize("args, message", [
    (["nosuch.quality"], "no view named 'nosuch'"),
    (["dcb_tasks"], "give VIEW.COLUMN"),
    (["dcb_tasks.nope"], "dcb_tasks has no column 'nope'"),
    (["dcb_tasks.model"], "dcb_tasks.model is VARCHAR, not a number"),
    (["dcb_tasks.quality", "--match", "task_id,nope"], "--match: dcb_tasks has no column 'nope'"),
    (["dcb_tasks.quality", "--b", "aware-c9"], "--b: no row of dcb_tasks has condition = 'aware-c9'; its values: aware-c1"),
    (["dcb_tasks.quality", "--match", "run_id"], "no item of dcb_tasks has a quality value in both groups"),
    (["dcb_tasks.quality", "--where", "1 = 1; select 2"], "2 statements"),
    (["dcb_tasks.quality", "--where", "nope > 1"], "nope"),
    (["dcb_tasks.quality", "--where", "cast(model as int) = 1"], "Could not convert string"),  # fails as it runs
    (["dcb_tasks.quality", "--plot", "pairs.txt"], "must end in .png, .pdf or .svg"),
])
def test_bad_input_is_one_line_and_exit_2(demo, run, args, message):
    defaults = {"--by": "condition", "--a": "blind", "--b": "aware-c2"}
    given = dict(zip(args[1::2], args[2::2]))
    flags = [x for k, v in (defaults | given).items() for x in (k, v)]
    result = run("compare", args[0], *flags, "-w", demo)
    assert result.code == 2 and message in result.err and len(result.err.strip().splitlines()) == 1, result.err
    assert result.out == ""
