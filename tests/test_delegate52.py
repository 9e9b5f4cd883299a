"""DELEGATE-52: hand-built relay logs whose every metric was computed by hand below.

The relays (N = 3 round trips, planned via --attr num_round_trips=3):

    gpt-5.4 direct, distractors on
      A  subtitles2  scores .95 (100/95)  .80 (100/90)  .78 (100/100)      complete
      B  json1       scores .90           context_mismatch -> 0   .50       complete, no counts
      C  subtitles3  scores 1.0 (50/50), then one forward line only         incomplete
    gpt-5.4 agentic, distractors on
      D  subtitles2  scores .90 (100/100)                                   incomplete

A and C share one file, their lines interleaved. Direct lines: 1000 prompt / 200
completion tokens, 10 s, no recorded cost (so gpt-5.4's registry price: $0.0055).
Agentic lines: 3000 / 100 tokens, 20 s, $0.02 recorded.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from d52_logs import counts, interleave, jsonl, relay_lines
from helpers import store_version, tracewh, write_zip

import tracewh as tw

A = relay_lines("A", "gpt-5.4", "subtitles", "subtitles2", [counts(.95, 100, 95), counts(.80, 100, 90), counts(.78, 100, 100)])
B = relay_lines("B", "gpt-5.4", "json", "json1", [{"score": .90}, {"error": "context_mismatch", "detailed_error": "missing"},
                                                   {"score": .50}])
C = relay_lines("C", "gpt-5.4", "subtitles", "subtitles3", [counts(1.0, 50, 50)], last_forward_only=True)
D = relay_lines("D", "agentic-gpt-5.4", "subtitles", "subtitles2", [counts(.90, 100, 100)], agentic_tools={
    "forward": (["read_file", "read_file", "read_file", "run_python", "write_file", "finish"],
                ["notes.md", "distractor_context/notes.md", "ocean.srt"]),
    "backward": (["write_file", "finish"], []),
})
DATASET = {"sample_id": "subtitles2", "sample_type": "subtitles", "sample_name": "Ocean documentary",
           "metadata": {"basic_state_num_tokens": 3200},
           "states": [{"state_id": "basic_state", "solution_folder": "basic_state", "context": ["ocean.srt"],
                       "prompts": [{"target_state": "edit_1", "prompt": "Split", "prompt_id": "basic_to_split",
                                    "operations": ["split & merge"]}]}],
           "files": {"basic_state/ocean.srt": "1\n...", "distractor_context/notes.md": "x",
                     "distractor_context/budget.csv": "y"}}


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("d52")
    archive = write_zip(tmp / "run.zip", {
        "logs/relay/results_subtitles_gpt-5.4.jsonl": jsonl(interleave(A, C)),
        "logs/relay/results_json_gpt-5.4.jsonl": jsonl(B),
        "logs/relay/results_subtitles_agentic-gpt-5.4.jsonl": jsonl(D),
        "delegate52.jsonl": jsonl([DATASET]),
    })
    tracewh("ingest", archive, "--attr", "num_round_trips=3", "-w", tmp / "wh", check=True)
    assert tw.open(tmp / "wh").log()[0].adapters == "delegate52-dataset,delegate52-relay"
    return tmp / "wh"


def rows(wh: Path, query: str) -> list[tuple]:
    return tw.open(wh).sql(query).fetchall()


def test_every_line_is_an_llm_call_and_every_backward_line_a_score(wh):
    assert rows(wh, "select mode, count(*) from d52_interactions group by 1 order by 1") == [("agentic", 2), ("direct", 15)]
    assert rows(wh, "select count(*) from d52_scores") == [(8,)]
    assert rows(wh, "select tool_name, count(*) from tool_calls where benchmark = 'delegate52' group by 1 order by 1") == [
        ("finish", 2), ("read_file", 3), ("run_python", 1), ("write_file", 2)]


def test_interaction_index_edit_ids_time_and_cost(wh):
    first_a = rows(wh, """select k, round_trip, direction, edit_id, round(cost_usd, 6) from d52_interactions
                          where env_id = 'subtitles2' and mode = 'direct' order by k""")
    assert first_a[:4] == [(1, 1, "forward", "edit_1", 0.0055), (2, 1, "backward", "edit_1", 0.0055),
                           (3, 2, "forward", "edit_2", 0.0055), (4, 2, "backward", "edit_2", 0.0055)]
    assert rows(wh, "select distinct cost_usd, payload ->> '$.cost_source' from llm_calls where model = 'gpt-5.4' "
                    "and payload ->> '$.mode' = 'agentic'") == [(0.02, "recorded")]
    # The BSON ObjectId's first four bytes are the UTC second of the interaction.
    assert rows(wh, "select min(epoch(ts)) from d52_scores") == [(1776000002.0,)]


def test_context_mismatch_scores_zero_and_keeps_its_error(wh):
    assert rows(wh, "select score, error, n_ref from d52_scores where env_id = 'json1' and round_trip = 2") == [
        (0.0, "context_mismatch", None)]


def test_relays(wh):
    assert rows(wh, "select env_id, mode, distractors, domain, round_trips, complete, round(rs_end, 6) "
                    "from d52_relays order by env_id, mode") == [
        ("json1", "direct", True, "json", 3, True, 50.0),
        ("subtitles2", "agentic", True, "subtitles", 1, False, 90.0),
        ("subtitles2", "direct", True, "subtitles", 3, True, 78.0),
        ("subtitles3", "direct", True, "subtitles", 1, False, 100.0),
    ]


def test_rs_at_k(wh):
    assert rows(wh, "select mode, k, round(rs, 6), n_relays from d52_rs_at_k order by mode, k") == [
        ("agentic", 2, 90.0, 1),
        ("direct", 2, 95.0, 3),  # (95 + 90 + 100) / 3
        ("direct", 4, 40.0, 2),  # (80 + 0) / 2: C never reached round trip 2
        ("direct", 6, 64.0, 2),  # (78 + 50) / 2
    ]


def test_rs_at_k_pivots_into_the_paper_table_shape(wh):
    out = tracewh("sql", "pivot (select model, k, round(rs, 1) as rs from d52_rs_at_k where mode = 'direct') "
                         "on k using first(rs) group by model", "-w", wh, "-f", "csv", check=True).out
    assert out.splitlines() == ["model,2,4,6", "gpt-5.4,95.0,40.0,64.0"]


def test_domain_rs_buckets_and_readiness(wh):
    assert rows(wh, "select mode, domain, category, k_end, round(rs_end, 6), bucket, ready "
                    "from d52_domain_rs order by mode, domain") == [
        ("agentic", "subtitles", "Creative & Media", 2, 90.0, "90-95", False),
        ("direct", "json", "Code & Config", 6, 50.0, "<55", False),
        ("direct", "subtitles", "Creative & Media", 6, 78.0, "70-80", False),
    ]


def test_critical_errors(wh):
    # Drops: A .05, .15*, .02; B .10* (0.90 -> 0.80 style float edge), .90*, 0; C 0.  (* critical)
    got = rows(wh, "select mode, n_relays, pct_critical, avg_drop, avg_crit_drop from d52_critical order by mode")
    assert got[0] == ("agentic", 1, pytest.approx(100.0), pytest.approx(10.0), pytest.approx(10.0))
    assert got[1] == ("direct", 3, pytest.approx(100 * 1.15 / 1.22), pytest.approx(100 * 1.22 / 3),
                      pytest.approx(100 * 1.15 / 3))


def test_cumulative_critical_share_by_k(wh):
    got = rows(wh, "select k, pct_runs_with_critical from d52_critical_by_k where mode = 'direct' order by k")
    assert got == [(2, pytest.approx(100 / 3)), (4, pytest.approx(200 / 3)), (6, pytest.approx(200 / 3))]


def test_deletion_vs_corruption(wh):
    # Scores with counts: A (.95, 95/100) (.80, 90/100) (.78, 100/100), C (1.0, 50/50); total degradation .47.
    got = rows(wh, "select mode, n_scores, deletion_pct, corruption_pct from d52_deletion_corruption order by mode")
    assert got[0] == ("agentic", 1, pytest.approx(0.0), pytest.approx(100.0))
    assert got[1] == ("direct", 4, pytest.approx(100 * .15 / .47), pytest.approx(100 * .32 / .47))


def test_agentic_overhead(wh):
    got = rows(wh, "select * from d52_agentic_overhead")
    assert got == [("gpt-5.4", True, 2, 4.0,  # 6 + 2 tool calls over 2 tasks
                    pytest.approx(3.0), pytest.approx(0.5), pytest.approx(0.02 / 0.0055), pytest.approx(2.0),
                    0.0, 50.0, 50.0, 0.0,  # forward: code + write; backward: write only
                    pytest.approx(25.0))]  # notes.md (read twice, two spellings) of 2 offered, twice


def test_environments_from_the_dataset(wh):
    assert rows(wh, "select env_id, domain, category, n_edits, distractor_files, doc_tokens, edits -> '$[0].tags' "
                    "from d52_environments") == [
        ("subtitles2", "subtitles", "Creative & Media", 1, ["budget.csv", "notes.md"], 3200.0, '["split & merge"]')]


def test_spearman_short_vs_long(tmp_path):
    lines = []
    for model, (rs2, rs4) in {"m1": (.9, .5), "m2": (.8, .7), "m3": (.7, .6)}.items():
        lines += relay_lines(model, model, "json", "json1", [{"score": rs2}, {"score": rs4}])
    archive = write_zip(tmp_path / "r.zip", {"results_json_m.jsonl": jsonl(lines)})
    tracewh("ingest", archive, "-w", tmp_path / "wh", check=True)
    assert rows(tmp_path / "wh", "select mode, n_models, spearman_rs2_rs_end from d52_short_long") == [
        ("direct", 3, pytest.approx(-0.5))]  # ranks (3,2,1) vs (1,3,2): 1 - 6*6/(3*8)


def test_qa_log_round_trips_become_scores(tmp_path):
    edit = {"sample_id": "json1", "sample_type": "json", "model_name": "gpt-5.4", "timestamp": "2026-04-14_18-01-31",
            "target_state_id": "edit_1", "source_state_id": "basic_state", "edit_prompt": "Sort keys", "run_idx": 0,
            "raw_llm_response": "", "evaluation": {}, "output_tokens": 10, "llm_latency": 1.0, "prompt_tokens": 100,
            "completion_tokens": 10, "reasoning_tokens": 0, "total_tokens": 110, "total_usd": 0.0}
    summary = {"sample_id": "json1", "sample_type": "json", "model_name": "gpt-5.4", "direction": "round_trip",
               "run_idx": 0, "forward_response_id": "f1", "backward_response_id": "b1", "forward_score": None,
               "backward_score": None, "forward_error": "context_mismatch", "backward_error": "context_mismatch",
               "round_trip_success": False, "total_latency": 2.0, "total_tokens": 220, "total_usd": 0.0}
    lines = [edit | {"direction": "forward", "response_id": "f1"}, edit | {"direction": "backward", "response_id": "b1"},
             summary]
    archive = write_zip(tmp_path / "qa.zip", {"logs/edit_testing/json1_gpt-5.4.jsonl": jsonl(lines)})
    tracewh("ingest", archive, "-w", tmp_path / "wh", check=True)
    assert rows(tmp_path / "wh", "select metric, score, error from scores") == [("qa_round_trip", 0.0, "context_mismatch")]
    assert rows(tmp_path / "wh", "select count(*) from llm_calls") == [(2,)]
    assert rows(tmp_path / "wh", "select count(*) from d52_interactions") == [(0,)]  # QA edits are not relays


def test_a_grown_results_file_reingests_only_its_new_lines(tmp_path):
    first = write_zip(tmp_path / "a.zip", {"results_json_gpt-5.4.jsonl": jsonl(B[:4])})
    grown = write_zip(tmp_path / "b.zip", {"results_json_gpt-5.4.jsonl": jsonl(B)})
    tracewh("ingest", first, "-w", tmp_path / "wh", check=True)
    result = tracewh("ingest", grown, "-w", tmp_path / "wh", check=True)
    assert "3 events added" in result.out  # 2 llm_calls + 1 score; run_attrs and the first 4 lines dedupe by id


@pytest.mark.parametrize("mutate, expected", [
    (lambda r: r | {"round_trip_direction": "sideways"}, "field 'round_trip_direction'"),
    (lambda r: r | {"evaluation": {"score": "0.9"}}, "field 'evaluation.score': expected number"),
    (lambda r: r | {"evaluation": {"score": 1.5}}, "field 'evaluation.score': expected a score in [0, 1]"),
    (lambda r: {k: v for k, v in r.items() if k != "model_name"}, "field 'model_name': required field is missing"),
    (lambda r: r | {"rid_chain": []}, "field 'rid_chain'"),
])
def test_bad_relay_lines_are_refused_with_file_line_and_field(tmp_path, mutate, expected):
    lines = list(B)
    lines[3] = mutate(lines[3])
    archive = write_zip(tmp_path / "bad.zip", {"results_json_gpt-5.4.jsonl": jsonl(lines)})
    result = tracewh("ingest", archive, "-w", tmp_path / "wh")
    message = " ".join(result.err.split())
    assert result.code == 2 and "bad.zip!results_json_gpt-5.4.jsonl, line 4" in message and expected in message
    assert store_version(tmp_path / "wh") is None


def test_the_environment_dataset_is_reference_data_not_a_run(wh):
    # delegate52.jsonl is stored under the pseudo-run `delegate52-dataset` (registry events, plus
    # the --attr run attributes): `runs` lists the relay runs only, d52_environments still reads it
    runs = {run_id for (run_id,) in rows(wh, "select run_id from runs")}
    assert runs and "delegate52-dataset" not in runs and rows(wh, "select count(*) from runs where model is null") == [(0,)]
    assert rows(wh, "select kind, count(*) from events where run_id = 'delegate52-dataset' group by 1 order by 1") == [
        ("registry", 1), ("run_attrs", 1)]
    assert rows(wh, "select env_id, domain from d52_environments") == [("subtitles2", "subtitles")]
