"""DecisionBench: hand-built run archives whose every metric was computed by hand below.

Pool (N = 5): OpenAI oa-big, oa-small, oa-mini (k = 3); Anthropic an-1 and Google gg-1 (k = 1).

Stage 1 (gaia, blind): per model one information-retrieval task (a web_search step) and one
numerical task (a calculator step), quality (cost):

    model      IR           NUM
    oa-big     1.0 (0.10)   0.0 (0.10)
    oa-small   0.5 (0.02)   0.5 (0.02)
    oa-mini    0.0 (0.01)   1.0 (0.05)
    an-1       0.5 (0.02)   1.0 (0.04)
    gg-1       0.0 (0.01)   0.0 (0.01)

Stage 2 (gaia): oa-big blind T1 (IR, IR, call an-1; q 0), T2 (NUM, call oa-mini; q 1),
T3 (call gg-1 first; q .5), T4 (IR, NUM, call oa-small; q 1); an-1 blind T5 (IR, call
gg-1; q 1); oa-big aware-tool-only T6 (IR, read_profile, call oa-mini; q 0). Every
completion costs 0.01 and every peer completion 0.005.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import tracewh

import tracewh as tw
from tracewh.demo.decisionbench_archive import write_run_archive

POOL = [{"model": "oa-big", "vendor": "OpenAI"}, {"model": "oa-small", "vendor": "OpenAI"},
        {"model": "oa-mini", "vendor": "OpenAI"}, {"model": "an-1", "vendor": "Anthropic"},
        {"model": "gg-1", "vendor": "Google"}]
TOOL = {"IR": ("web_search", {"query": "capital of France"}), "NUM": ("calculator", {"expr": "two plus two"}),
        "PROFILE": ("read_profile", {"model": "an-1"})}


def completion(step: int, model: str, tools: list[tuple[str, dict]], cost: float = 0.01, **extra) -> dict:
    calls = [{"id": f"c{step}-{i}", "name": name, "arguments": __import__("json").dumps(args)}
             for i, (name, args) in enumerate(tools)]
    return {"type": "completion", "step": step, "model": model, "finish_reason": "tool_calls" if calls else "stop",
            "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "reasoning_tokens": 0, "cached_tokens": 0},
            "latency_s": 1.0, "cost_usd": cost, "content": extra.get("content"), "tool_calls": calls}


def task_trace(model: str, plan: list[str]) -> list[dict]:
    """plan: 'IR', 'NUM', 'PROFILE' or 'call:<peer>', one per step."""
    lines = []
    for step, action in enumerate(plan, start=1):
        if action.startswith("call:"):
            peer = action[5:]
            lines.append(completion(step, model, [("call_model", {"model": peer, "subtask": "help", "budget_usd": 0.5})]))
            lines.append({"type": "peer_completion", "parent_tool_call_id": f"c{step}-0", "model": peer,
                          "usage": {"prompt_tokens": 500, "completion_tokens": 50}, "finish_reason": "stop",
                          "latency_s": 0.5, "cost_usd": 0.005, "content": "answer"})
            lines.append({"type": "tool_result", "step": step, "tool_call_id": f"c{step}-0", "name": "call_model",
                          "content": "answer", "error": None, "latency_s": 0.6})
        else:
            lines.append(completion(step, model, [TOOL[action]]))
    return lines


def run(tmp: Path, name: str, model: str, split: str, condition: str, tasks: dict[str, tuple[list[str], float]],
        costs: dict[str, float] | None = None, suite: str = "gaia") -> Path:
    records, traces = [], {}
    for task_id, (plan, quality) in tasks.items():
        traces[task_id] = task_trace(model, plan)
        if costs:  # stage-1 tasks: one completion whose cost is the task's cost
            traces[task_id][0]["cost_usd"] = costs[task_id]
        records.append({"task_id": task_id, "quality": quality, "cost_usd": 0.0, "latency_s": 5.0,
                        "n_steps": len(plan), "error": None})
    manifest = {"run_id": name, "suite": suite, "shard": None, "split": split, "condition": condition,
                "orchestrator": model, "tagger_version": "v2.0", "pool": POOL}
    return write_run_archive(tmp / f"{name}.zip", manifest, records, traces, {"an-1": "# an-1\nstrong at NUM"})


STAGE1 = {"oa-big": ((1.0, .10), (0.0, .10)), "oa-small": ((.5, .02), (.5, .02)), "oa-mini": ((0.0, .01), (1.0, .05)),
          "an-1": ((.5, .02), (1.0, .04)), "gg-1": ((0.0, .01), (0.0, .01))}


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("dcb")
    archives = []
    for model, ((q_ir, c_ir), (q_num, c_num)) in STAGE1.items():
        archives.append(run(tmp, f"s1-{model}", model, "stage1", "blind",
                            {"gaia/ir": (["IR"], q_ir), "gaia/num": (["NUM"], q_num)},
                            costs={"gaia/ir": c_ir, "gaia/num": c_num}))
    archives.append(run(tmp, "s2-big-blind", "oa-big", "stage2", "blind", {
        "gaia/t1": (["IR", "IR", "call:an-1"], 0.0), "gaia/t2": (["NUM", "call:oa-mini"], 1.0),
        "gaia/t3": (["call:gg-1"], 0.5), "gaia/t4": (["IR", "NUM", "call:oa-small"], 1.0)}))
    archives.append(run(tmp, "s2-an-blind", "an-1", "stage2", "blind", {"gaia/t5": (["IR", "call:gg-1"], 1.0)}))
    archives.append(run(tmp, "s2-big-aware", "oa-big", "stage2", "aware-tool-only",
                        {"gaia/t6": (["IR", "PROFILE", "call:oa-mini"], 0.0)}))
    tracewh("ingest", *archives, "-w", tmp / "wh", check=True)
    return tmp / "wh"


def rows(wh: Path, query: str) -> list[tuple]:
    return tw.open(wh).sql(query).fetchall()


def test_tasks_roll_peer_cost_up_to_the_delegating_task(wh):
    assert rows(wh, "select task_id, quality, round(cost_usd, 6), n_steps, n_delegations, n_profile_reads "
                    "from dcb_tasks where run_id = 's2-big-blind' order by task_id") == [
        ("gaia/t1", 0.0, 0.035, 3, 1, 0), ("gaia/t2", 1.0, 0.025, 2, 1, 0),
        ("gaia/t3", 0.5, 0.015, 1, 1, 0), ("gaia/t4", 1.0, 0.035, 3, 1, 0)]
    assert rows(wh, "select n_profile_reads from dcb_tasks where task_id = 'gaia/t6'") == [(1,)]


def test_peer_calls_are_children_of_their_delegation(wh):
    assert rows(wh, """select d.to_model, c.model, c.agent from delegations d
                       join llm_calls c on c.parent_span_id = d.span_id where d.run_id = 's2-an-blind'""") == [
        ("gg-1", "gg-1", "peer")]


def test_quality_per_model_suite_condition(wh):
    got = rows(wh, "select model, condition, n_tasks, mean_q, round(mean_cost, 6), delegations_per_task "
                   "from dcb_quality order by model, condition")
    assert got == [("an-1", "blind", 1, 1.0, 0.025, 1.0), ("oa-big", "aware-tool-only", 1, 0.0, 0.035, 1.0),
                   ("oa-big", "blind", 4, 0.625, 0.0275, 1.0)]


def test_skill_stats_rank_with_ties_broken_by_cost_then_name(wh):
    got = rows(wh, "select skill, model, n_tasks, pass_rate, round(cost_per_success, 6), rank "
                   "from dcb_skill_stats order by skill, rank")
    assert got == [
        ("information_retrieval", "oa-big", 1, 100.0, 0.1, 1),
        ("information_retrieval", "an-1", 1, 50.0, 0.04, 2),  # ties oa-small on pass and cost: name
        ("information_retrieval", "oa-small", 1, 50.0, 0.04, 3),
        ("information_retrieval", "gg-1", 1, 0.0, None, 4),
        ("information_retrieval", "oa-mini", 1, 0.0, None, 5),
        ("numerical_computation", "an-1", 1, 100.0, 0.04, 1),
        ("numerical_computation", "oa-mini", 1, 100.0, 0.05, 2),
        ("numerical_computation", "oa-small", 1, 50.0, 0.04, 3),
        ("numerical_computation", "gg-1", 1, 0.0, None, 4),
        ("numerical_computation", "oa-big", 1, 0.0, None, 5),
    ]


def test_delegations_dominant_skill_and_peer_rank(wh):
    assert rows(wh, "select task_id, condition, peer, peer_vendor, dominant_skill, peer_rank "
                    "from dcb_delegations order by task_id") == [
        ("gaia/t1", "blind", "an-1", "Anthropic", "information_retrieval", 1),
        ("gaia/t2", "blind", "oa-mini", "OpenAI", "numerical_computation", 2),
        ("gaia/t3", "blind", "gg-1", "Google", None, None),  # nothing before the call
        ("gaia/t4", "blind", "oa-small", "OpenAI", "numerical_computation", 3),  # IR/NUM tie: most recent
        ("gaia/t5", "blind", "gg-1", "Google", "information_retrieval", 3),
        ("gaia/t6", "aware-tool-only", "oa-mini", "OpenAI", "information_retrieval", 4),  # read_profile is infra
    ]


def test_fidelity(wh):
    assert rows(wh, "select * from dcb_fidelity order by condition") == [
        ("aware-tool-only", 1, 0.0, 0.0), ("blind", 4, 25.0, 100.0)]
    got = rows(wh, "select model, condition, n, fid1_pct, fid3_pct from dcb_fidelity_cells order by model, condition")
    assert got == [("an-1", "blind", 1, 0.0, 100.0), ("oa-big", "aware-tool-only", 1, 0.0, 0.0),
                   ("oa-big", "blind", 3, pytest.approx(100 / 3), 100.0)]


def test_self_preference_against_chance_for_vendors_of_three_and_of_one(wh):
    assert rows(wh, "select * from dcb_self_preference order by orchestrator") == [
        ("an-1", "Anthropic", 1, 0.0, 0.0, None),  # sole model of its vendor: chance 0, no ratio
        ("oa-big", "OpenAI", 5, 60.0, 50.0, 1.2),  # (3 - 1) / (5 - 1)
    ]
    assert rows(wh, "select * from dcb_vendor_flow order by orchestrator_vendor, peer_vendor") == [
        ("Anthropic", "Google", 1, 100.0), ("OpenAI", "Anthropic", 1, 20.0), ("OpenAI", "Google", 1, 20.0),
        ("OpenAI", "OpenAI", 3, 60.0)]


def test_counterfactual_ceiling_at_every_rho(wh):
    # oa-big: T1 IR (p* .5, q 0), T2 NUM (p* 1, q 1), T3 no skill (q .5), T4 NUM (q 1).
    got = rows(wh, "select rho, actual, ceiling, gap from dcb_ceiling where model = 'oa-big' order by rho desc")
    assert [float(r[0]) for r in got] == [1.0, 0.9, 0.8, 0.7]
    for (rho, actual, ceiling, gap) in got:
        assert actual == pytest.approx(0.625)
        assert ceiling == pytest.approx((0.5 * float(rho) + 2.5) / 4)
        assert gap == pytest.approx(0.125 * float(rho))
    assert {(float(r[0]), r[1], r[2]) for r in rows(wh, "select rho, actual, ceiling from dcb_ceiling where model = 'an-1'")} == {
        (1.0, 1.0, 1.0), (0.9, 1.0, 1.0), (0.8, 1.0, 1.0), (0.7, 1.0, 1.0)}


def test_profiles_served_are_stored(wh):
    assert rows(wh, "select distinct payload ->> '$.text' from events where kind = 'registry' "
                    "and payload ->> '$.name' = 'profile_card'") == [("# an-1\nstrong at NUM",)]


def test_a_newer_archive_format_is_refused(tmp_path):
    path = write_run_archive(tmp_path / "x.zip", {"run_id": "x", "suite": "gaia", "orchestrator": "m"}, [], {})
    import zipfile

    with zipfile.ZipFile(path, "a") as z:
        z.writestr("v2/manifest.json", '{"format": "decisionbench-run/2"}')
    result = tracewh("ingest", path, "-w", tmp_path / "wh")
    assert result.code == 2 and "decisionbench-run/2" in result.err and "not supported" in result.err


def test_materialized_building_blocks_change_no_result(wh):
    """Views marked `-- tracewh: materialize` are computed once per store version, in the catalog; the
    rows are the same as when every view is a plain view, as in the .sql files."""
    from tracewh.queries.engine import QueryEngine
    from tracewh.queries.registry import load_views

    cached = tw.open(wh)
    plain = QueryEngine(cached.store.files()).con
    for view in load_views():
        plain.execute(view.sql)
    for view in ("dcb_fidelity", "dcb_self_preference", "dcb_ceiling", "dcb_delegations", "dcb_tasks"):
        query = f"select * from {view} order by all"
        assert cached.sql(query).fetchall() == plain.execute(query).fetchall(), view
    tables = {r[0] for r in cached.sql("select table_name from duckdb_tables()").fetchall()}  # in the catalog
    assert {"tracewh_cache_dcb_step_skills", "tracewh_cache_dcb_tasks", "tracewh_cache_dcb_candidates"} <= tables
