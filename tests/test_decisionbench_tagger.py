"""The DecisionBench step tagger, rule by rule and where rules compete (the DecisionBench paper §3.4 and App. D; docs/formats/decisionbench.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import tracewh

import tracewh as tw
from tracewh.demo.decisionbench_archive import run_members, write_zip

NUMBERS = {"a": 12, "b": 7.5, "c": "3 apples"}


def step(n: int, tools: list[tuple[str, dict]] = (), content: str | None = None, prompt: int = 1000) -> dict:
    return {"type": "completion", "step": n, "model": "m", "finish_reason": "tool_calls" if tools else "stop",
            "usage": {"prompt_tokens": prompt, "completion_tokens": 10}, "latency_s": 1.0, "cost_usd": 0.001,
            "content": content,
            "tool_calls": [{"id": f"c{n}{i}", "name": t, "arguments": json.dumps(a)} for i, (t, a) in enumerate(tools)]}


# task id -> (suite, steps, expected skill of the last step)
CASES = {
    "r1-infra-only": ("gaia", [step(1, [("call_model", {"model": "p", "budget_usd": 1.5}), ("read_profile", {"model": "p"})])],
                      "_infra_delegation"),
    "r1-loses-to-r2-when-mixed": ("gaia", [step(1, [("call_model", {"model": "p"}), ("calculator", {})])],
                                  "numerical_computation"),
    "r2-calculator-name": ("gaia", [step(1, [("python_eval", {"code": "x"})])], "numerical_computation"),
    "r2-three-numbers-beat-r3": ("tau", [step(1, [("get_order", NUMBERS)])], "numerical_computation"),
    "r2-two-numbers-not-enough": ("tau", [step(1, [("get_order", {"a": 12, "b": 7})])], "information_retrieval"),
    "r3-substring-search": ("gaia", [step(1, [("search_direct_flight", {"origin": "JFK"})])], "information_retrieval"),
    "r3-find-user": ("tau", [step(1, [("find_user_id_by_email", {"email": "x@y.z"})])], "information_retrieval"),
    "r4-other-tool": ("bfcl", [step(1, [("mkdir", {"dir_name": "docs"})])], "tool_schema_adherence"),
    "r5-policy": ("tau", [step(1, content="Sorry, that is against our airline policy.")], "domain_policy_compliance"),
    "r5-beats-r6": ("tau", [step(1, content="Please confirm the cancellation.", prompt=30000)], "domain_policy_compliance"),
    "r5-only-for-tau": ("bfcl", [step(1, content="That is not permitted.")], "multi_turn_state_tracking"),
    "r6-long-input": ("gaia", [step(1, content="Summary.", prompt=15000)], "long_input_handling"),
    "r6-beats-r8": ("tau", [step(1, content="Here you go.", prompt=20000)], "long_input_handling"),
    "r7-two-prior-tools": ("gaia", [step(1, [("web_search", {"q": "a"})]), step(2, [("web_search", {"q": "b"})]),
                                    step(3, content="The answer is Lyon.")], "multi_step_reasoning"),
    "r7-one-prior-tool-is-none": ("gaia", [step(1, [("web_search", {"q": "a"})]), step(2, content="Lyon.")], None),
    "r8-tau-text": ("tau", [step(1, content="Your booking is updated.")], "multi_turn_state_tracking"),
    "r8-bfcl-text": ("bfcl", [step(1, content="Done.")], "multi_turn_state_tracking"),
}


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("tagger")
    members = {}
    for suite in ("gaia", "tau", "bfcl"):
        traces = {task: steps for task, (s, steps, _) in CASES.items() if s == suite}
        manifest = {"run_id": f"tag-{suite}", "suite": suite, "split": "stage1", "condition": "blind", "orchestrator": "m"}
        records = [{"task_id": t, "quality": 1.0} for t in traces]
        members |= run_members(manifest, records, traces, folder=f"{suite}/")
    tracewh("ingest", write_zip(tmp / "tagger.zip", members), "-w", tmp / "wh", check=True)
    return tmp / "wh"


@pytest.mark.parametrize("task", CASES)
def test_rule(wh, task):
    got = tw.open(wh).sql("select skill, tagger_version from dcb_step_skills where task_id = $t order by step desc limit 1",
                          params={"t": task}).fetchall()
    assert got == [(CASES[task][2], "tracewh-sql-1")]
