"""Suite-native result files: the real τ-bench trajectories, and BFCL result + score files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import DATA, tracewh, write_zip

import tracewh as tw

TAU = DATA / "taubench" / "gpt-4o-airline.json"


@pytest.fixture(scope="module")
def tau(tmp_path_factory) -> Path:
    if not TAU.exists():
        pytest.fail(f"{TAU} is missing: the real τ-bench fixture must be in tests/data (see tests/data/README.md)")
    wh = tmp_path_factory.mktemp("tau") / "wh"
    tracewh("ingest", TAU, "-w", wh, "--attr", "condition=blind", "--attr", "split=stage2", check=True)
    return wh


def test_real_taubench_file_tasks_trials_and_mean_reward(tau):
    wh = tw.open(tau)
    assert wh.sql("select count(*), count(distinct task_id), count(distinct trial), avg(quality), sum(quality) "
                  "from dcb_tasks").fetchall() == [(200, 50, 4, 0.42, 84.0)]
    assert wh.sql("select distinct model, suite, shard, condition, split from dcb_tasks").fetchall() == [
        ("gpt-4o", "tau", "airline", "blind", "stage2")]
    assert wh.sql("select min(task_id), max(task_id) from dcb_tasks").fetchall() == [("airline-task-0", "airline-task-9")]


def test_real_taubench_messages_and_user_cost(tau):
    wh = tw.open(tau)
    assert wh.sql("select count(*) from llm_calls").fetchall() == [(2454,)]  # assistant messages
    assert wh.sql("select payload ->> '$.role', count(*) from events where kind = 'message' group by 1 order by 1"
                  ).fetchall() == [("system", 200), ("user", 1490)]
    assert wh.sql("select count(*) from tool_calls").fetchall() == [(1164,)]
    assert wh.sql("select count(*) from events where kind = 'tool_result'").fetchall() == [(1164,)]
    user_cost = wh.sql("select sum(TRY_CAST(payload ->> '$.user_cost_usd' AS DOUBLE)), "
                       "count(payload ->> '$.user_cost_usd') from events where kind = 'task_finished'").fetchall()
    assert user_cost[0][0] == pytest.approx(0.50315) and user_cost[0][1] == 195
    assert wh.sql("select sum(cost_usd) from dcb_tasks").fetchall() == [(None,)]  # agent cost is not recorded


BFCL_RESULT = {"id": "multi_turn_base_0",
               "result": [[[{"ls": "{\"a\": false}"}], [{"cd": "{\"folder\": \"document\"}"}]], [[{"ls<|channel|>x": "{bad"}]]],
               "input_token_count": [[3363, 3509], [4000]], "output_token_count": [[125, 36], [20]],
               "latency": [[3.05, 0.58], [1.5]],
               "inference_log": [[{"role": "state_info", "class_name": "GorillaFileSystem", "content": {}}],
                                 {"begin_of_turn_query": [{"role": "user", "content": "list"}],
                                  "step_0": [{"role": "assistant", "content": [{"ls": "{}"}]},
                                             {"role": "handler_log", "content": "Successfully decoded model response."}],
                                  "step_1": []},
                                 {"step_0": [{"role": "handler_log", "content": "Error decoding the model response."}]}]}


def test_bfcl_results_and_scores(tmp_path):
    results = [BFCL_RESULT, BFCL_RESULT | {"id": "multi_turn_base_1"},
               {"id": "multi_turn_base_2", "result": "Error during inference: timeout", "traceback": "..."}]
    score = [{"accuracy": 0.33, "correct_count": 1, "total_count": 3},
             {"id": "multi_turn_base_1", "model_name": "m", "test_category": "multi_turn_base", "valid": False,
              "error": {"error_message": "state mismatch", "error_type": "multi_turn:instance_state_mismatch"}},
             {"id": "multi_turn_base_2", "valid": False, "error": {"error_type": "multi_turn:empty_turn_model_response"}}]
    archive = write_zip(tmp_path / "bfcl.zip", {
        "result/gpt-5.4/multi_turn/BFCL_v4_multi_turn_base_result.json": "".join(json.dumps(r) + "\n" for r in results),
        "score/gpt-5.4/multi_turn/BFCL_v4_multi_turn_base_score.json": "".join(json.dumps(r) + "\n" for r in score),
    })
    tracewh("ingest", archive, "-w", tmp_path / "wh", check=True)
    wh = tw.open(tmp_path / "wh")
    assert wh.sql("select task_id, model, suite, quality, n_steps from dcb_tasks order by task_id").fetchall() == [
        ("multi_turn_base_0", "gpt-5.4", "bfcl", 1.0, 3), ("multi_turn_base_1", "gpt-5.4", "bfcl", 0.0, 3),
        ("multi_turn_base_2", "gpt-5.4", "bfcl", 0.0, 0)]
    calls = wh.sql("select prompt_tokens, completion_tokens, latency_s, payload ->> '$.handler_log' from llm_calls "
                   "where task_id = 'multi_turn_base_0' order by seq").fetchall()
    assert [c[:3] for c in calls] == [(3363, 125, 3.05), (3509, 36, 0.58), (4000, 20, 1.5)]
    assert json.loads(calls[2][3]) == ["Error decoding the model response."]
    tools = wh.sql("select tool_name, arguments from tool_calls where task_id = 'multi_turn_base_0' order by seq").fetchall()
    assert [(t, json.loads(a)) for t, a in tools] == [("ls", {"a": False}), ("cd", {"folder": "document"}),
                                                       ("ls<|channel|>x", {"_raw": "{bad"})]
    error = wh.sql("select payload ->> '$.error' from events where kind = 'task_finished' and task_id = 'multi_turn_base_2'")
    assert error.fetchall() == [("Error during inference: timeout",)]


def test_bfcl_without_a_score_file_has_no_quality(tmp_path):
    archive = write_zip(tmp_path / "r.zip", {"result/m/BFCL_v4_multi_turn_base_result.json": json.dumps(BFCL_RESULT) + "\n"})
    tracewh("ingest", archive, "-w", tmp_path / "wh", check=True)
    assert tw.open(tmp_path / "wh").sql("select quality from dcb_tasks").fetchall() == [(None,)]


def test_bfcl_runner_failure_lines_with_a_list_of_messages(tmp_path):
    # The runner's own failure lines (inference_error, then force_terminated, for a test whose
    # result is the inference-error string) write error_message as a list of strings
    # (docs/formats/bfcl.md §3); they were refused as bad input.
    results = [{"id": "multi_turn_base_2", "result": "Error during inference: timeout", "traceback": "..."}]
    failures = [("multi_turn:inference_error", ["Error during inference: timeout", "Traceback: ..."]),
                ("multi_turn:force_terminated", ["Model was force-terminated during inference phase. The length of "
                                                 "the model result turns (0) does not match the length of the "
                                                 "ground truth turns (2)."])]
    score = [{"accuracy": 0.0, "correct_count": 0, "total_count": 1},
             *({"id": "multi_turn_base_2", "valid": False, "error": {"error_message": message, "error_type": kind}}
               for kind, message in failures)]
    archive = write_zip(tmp_path / "bfcl.zip", {
        "result/m/BFCL_v4_multi_turn_base_result.json": "".join(json.dumps(r) + "\n" for r in results),
        "score/m/BFCL_v4_multi_turn_base_score.json": "".join(json.dumps(r) + "\n" for r in score),
    })
    tracewh("ingest", archive, "-w", tmp_path / "wh", check=True)
    wh = tw.open(tmp_path / "wh")
    judgments = wh.sql("select payload ->> '$.error_type', payload ->> '$.error_message' from events "
                       "where kind = 'judgment' order by seq").fetchall()
    assert judgments == [(kind, "\n".join(message)) for kind, message in failures]
    assert wh.sql("select task_id, quality from dcb_tasks").fetchall() == [("multi_turn_base_2", 0.0)]
