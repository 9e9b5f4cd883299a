"""`tracewh judge`: a rubric's targets judged by LLMs through the real openai and anthropic
clients, here talking to a fake judge server on 127.0.0.1 (tests/fake_judge.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_judge import FakeJudge
from helpers import store_version, tracewh, write_native

import tracewh as tw

LABEL_RUBRIC = """\
name: verdicts
version: 1
targets: |
  select event_id as target_id, run_id, task_id, model, payload ->> '$.text' as answer,
         payload ->> '$.gold' as reference
  from events where kind = 'message' order by task_id
prompt: |
  Is this answer right? {{ answer }}
labels: [right, wrong]
judges: [openai:gpt-5-nano, anthropic:claude-haiku-4.5]
temperature: 0
"""


def build_store(tmp_path: Path, n: int = 6) -> Path:
    """A store with `n` answers (message events) to judge, each with a gold label."""
    events = [{"run_id": "run-a", "benchmark": "custom", "kind": "message", "seq": i, "task_id": f"task-{i:03d}",
               "model": "gpt-5.4", "ts": "2026-05-01T00:00:00Z",
               "payload": {"role": "assistant", "text": f"answer number {i}", "gold": "right" if i % 3 else "wrong"}}
              for i in range(1, n + 1)]
    wh = tmp_path / "wh"
    tw.open(wh).ingest([write_native(tmp_path / "answers.jsonl", events)])
    return wh


@pytest.fixture(scope="module")
def untouched_store(tmp_path_factory) -> Path:
    """One store for the tests that must leave it as it was (each checks that it did)."""
    return build_store(tmp_path_factory.mktemp("untouched"), n=3)


def judge_env(fake: FakeJudge, tmp_path: Path) -> dict[str, str]:
    return os.environ | fake.env() | {"TRACEWH_HOME": str(tmp_path / "home")}


def rubric_file(tmp_path: Path, text: str = LABEL_RUBRIC, name: str = "rubric.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def rows(wh: Path, query: str) -> list[dict]:
    return tw.open(wh).query(query).arrow().to_pylist()


def test_judge_stores_each_answer_as_events_and_never_asks_twice(tmp_path):
    wh = build_store(tmp_path)
    rubric = rubric_file(tmp_path)
    with FakeJudge() as fake:
        first = tracewh("judge", rubric, "-w", wh, "-f", "json", env=judge_env(fake, tmp_path), check=True)
        assert fake.requests() == 12  # 6 targets x 2 judges
        summary = {r["judge"]: r for r in map(json.loads, first.out.splitlines())}
        assert {j: (r["asked"], r["cached"], r["invalid"]) for j, r in summary.items()} == {
            "openai:gpt-5-nano": (6, 0, 0), "anthropic:claude-haiku-4.5": (6, 0, 0)}

        again = tracewh("judge", rubric, "-w", wh, "-f", "json", env=judge_env(fake, tmp_path), check=True)
        assert fake.requests() == 12  # the second run asked nothing
        assert [json.loads(r)["cached"] for r in again.out.splitlines()] == [6, 6]

    judged = rows(wh, "select * from judgments where rubric = 'verdicts' order by rater, target_task_id")
    assert len(judged) == 12
    first_one = judged[0]
    assert first_one["run_id"] == "judge:verdicts" and first_one["benchmark"] == "judging"
    assert first_one["rater"] == "anthropic:claude-haiku-4.5" and first_one["rater_kind"] == "llm"
    assert first_one["target_run_id"] == "run-a" and first_one["target_task_id"] == "task-001"
    assert first_one["target_model"] == "gpt-5.4" and first_one["reference"] == "right"
    assert first_one["label"] in ("right", "wrong") and first_one["valid"] and first_one["reason"]
    assert first_one["prompt_tokens"] > 0 and first_one["cost_usd"] > 0
    payload = json.loads(first_one["payload"])
    assert payload["rubric_version"] == "1" and len(payload["rubric_digest"]) == 32 and payload["label_set"] == [
        "right", "wrong"]
    # what judging cost, from the judge run's own llm_call events and from the judge_costs view
    spent = rows(wh, "select sum(cost_usd) as usd, count(*) as calls from llm_calls where run_id like 'judge:%'")[0]
    costs = rows(wh, "select sum(cost_usd) as usd, sum(calls) as calls from judge_costs where rubric = 'verdicts'")[0]
    assert spent["calls"] == costs["calls"] == 12 and spent["usd"] == pytest.approx(costs["usd"])
    assert [b.source for b in tw.open(wh).log()][-1] == f"tracewh judge {rubric}"  # through the ledger


def test_a_judge_added_to_a_rubric_is_the_only_one_asked(tmp_path):
    wh = build_store(tmp_path, n=3)
    one_judge = LABEL_RUBRIC.replace("judges: [openai:gpt-5-nano, anthropic:claude-haiku-4.5]", "judges: [openai:gpt-5-nano]")
    with FakeJudge() as fake:
        tracewh("judge", rubric_file(tmp_path, one_judge), "-w", wh, env=judge_env(fake, tmp_path), check=True)
        tracewh("judge", rubric_file(tmp_path), "-w", wh, env=judge_env(fake, tmp_path), check=True)
        assert [model for model, _ in fake.answered()] == ["gpt-5-nano"] * 3 + ["claude-haiku-4.5"] * 3


def test_invalid_answers_are_stored_as_invalid_with_their_text_and_counted(tmp_path):
    wh = build_store(tmp_path, n=4)
    with FakeJudge() as fake:
        fake.decide = lambda model, prompt, space: (
            "I would say it is mostly right." if "number 1" in prompt else
            "```json\n{\"label\": \"Wrong\", \"reason\": \"fenced, other case\"}\n```" if "number 2" in prompt else
            {"label": "maybe", "reason": "not in the set"} if "number 3" in prompt else {"label": "right", "reason": "ok"})
        result = tracewh("judge", rubric_file(tmp_path), "-w", wh, "-f", "json", env=judge_env(fake, tmp_path),
                         check=True)
    assert [json.loads(r)["invalid"] for r in result.out.splitlines()] == [2, 2]
    judged = rows(wh, "select rater, target_task_id as task, label, valid, payload ->> '$.raw' as raw from judgments "
                      "where rubric = 'verdicts' and rater = 'openai:gpt-5-nano' order by task")
    assert [(r["task"], r["label"], r["valid"]) for r in judged] == [
        ("task-001", None, False), ("task-002", "wrong", True), ("task-003", None, False), ("task-004", "right", True)]
    assert judged[0]["raw"] == "I would say it is mostly right."
    assert json.loads(judged[2]["raw"]) == {"label": "maybe", "reason": "not in the set"}
    # invalid answers are no label, and judge_costs counts them
    assert rows(wh, "select count(*) as n from labels where rubric = 'verdicts'")[0]["n"] == 4
    assert rows(wh, "select invalid from judge_costs where judge = 'openai:gpt-5-nano'")[0]["invalid"] == 2


def test_rate_limits_and_server_errors_are_retried(tmp_path):
    wh = build_store(tmp_path, n=2)
    with FakeJudge() as fake:
        fake.fail_next(429, 2)
        fake.fail_next(500, 1)
        fake.fail_next(503, 1)
        tracewh("judge", rubric_file(tmp_path), "-w", wh, "--concurrency", "1", env=judge_env(fake, tmp_path),
                check=True)
        statuses = [r["status"] for r in fake.log]
    assert statuses[:4] == [429, 429, 500, 503] and statuses[4:] == [200] * 4
    assert rows(wh, "select count(*) as n from judgments where valid")[0]["n"] == 4


def test_budget_stops_before_the_spend_would_pass_it(tmp_path):
    wh = build_store(tmp_path, n=30)
    # $1 per 1,000 tokens: a call takes about 35 tokens ($0.035) and is estimated at about 180
    # (its prompt's characters / 3, plus max_tokens 100 of output)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"as_of": "2026-06-01", "models": {"gpt-5-nano": {"input": 1000, "output": 1000}}}))
    one_judge = LABEL_RUBRIC.replace("[openai:gpt-5-nano, anthropic:claude-haiku-4.5]", "[openai:gpt-5-nano]") \
        + "max_tokens: 100\n"
    with FakeJudge() as fake:
        result = tracewh("judge", rubric_file(tmp_path, one_judge), "-w", wh, "--budget-usd", "0.5",
                         "--prices", prices, "--concurrency", "2", "-f", "json", env=judge_env(fake, tmp_path),
                         check=True)
        asked = fake.requests()
    summary = json.loads(result.out)
    assert "budget $0.5 reached" in result.err
    assert 0 < asked < 30 and summary["asked"] == asked and summary["skipped"] == 30 - asked
    assert summary["cost_usd"] <= 0.5
    assert rows(wh, "select sum(cost_usd) as usd from judge_costs")[0]["usd"] == pytest.approx(summary["cost_usd"])


def test_a_budget_needs_a_price_for_every_judge(untouched_store, tmp_path):
    wh = untouched_store
    unpriced = LABEL_RUBRIC.replace("openai:gpt-5-nano", "openai:my-own-model")
    with FakeJudge() as fake:
        result = tracewh("judge", rubric_file(tmp_path, unpriced), "-w", wh, "--budget-usd", "1",
                         env=judge_env(fake, tmp_path))
        assert fake.requests() == 0
    assert result.code == 2 and "--budget-usd needs a price for judge openai:my-own-model" in result.err


def test_sample_and_limit_choose_targets(tmp_path):
    wh = build_store(tmp_path, n=10)
    one_judge = LABEL_RUBRIC.replace("[openai:gpt-5-nano, anthropic:claude-haiku-4.5]", "[openai:gpt-5-nano]")
    rubric = rubric_file(tmp_path, one_judge)
    with FakeJudge() as fake:
        tracewh("judge", rubric, "-w", wh, "--sample", "3", "--seed", "7", env=judge_env(fake, tmp_path), check=True)
        sampled = {p for _, p in fake.answered()}
        tracewh("judge", rubric, "-w", wh, "--sample", "3", "--seed", "7", env=judge_env(fake, tmp_path), check=True)
        assert len(sampled) == 3 and fake.requests() == 3  # the same sample: all stored already
        tracewh("judge", rubric, "-w", wh, "--limit", "2", env=judge_env(fake, tmp_path), check=True)
        limited = [p for _, p in fake.answered()][3:]
    first_two = {"answer number 1\n", "answer number 2\n"}
    assert sorted(p.split("? ")[1] for p in limited) == sorted(first_two - {p.split("? ")[1] for p in sampled})  # the first two, unless sampled


def test_a_killed_run_loses_no_answer_and_pays_for_none_twice(tmp_path):
    """kill -9 in the middle: every answer that had returned is committed by the next run, which
    asks only for the rest. With one request in flight at a time, at most that one is asked again."""
    wh = build_store(tmp_path, n=40)
    one_judge = LABEL_RUBRIC.replace("[openai:gpt-5-nano, anthropic:claude-haiku-4.5]", "[openai:gpt-5-nano]")
    rubric = rubric_file(tmp_path, one_judge)
    with FakeJudge() as fake:
        fake.delay_s = 0.05
        env = judge_env(fake, tmp_path)
        proc = subprocess.Popen([sys.executable, "-m", "tracewh", "judge", str(rubric), "-w", str(wh),
                                 "--concurrency", "1"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while len(fake.answered()) < 15 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        before_rerun = len(fake.answered())
        assert 15 <= before_rerun < 40
        rerun = tracewh("judge", rubric, "-w", wh, "-f", "json", env=env, check=True)
        answered = fake.answered()
    stored = rows(wh, "select target_task_id as task, payload ->> '$.key' as key from judgments")
    assert len(stored) == 40 and len({r["key"] for r in stored}) == 40  # none lost, none stored twice
    assert len(answered) - 40 <= 1  # asked twice: at most the one in flight at the kill
    summary = json.loads(rerun.out)
    assert summary["asked"] == len(answered) - before_rerun and summary["asked"] + summary["cached"] == 40
    assert not list((tmp_path / "home" / "judging" / "spool").glob("*/*"))  # the spool is committed and gone


@pytest.mark.parametrize(("change", "field", "says"), [
    (lambda r: r + "colour: blue\n", "colour", "unknown field"),
    (lambda r: r.replace("{{ answer }}", "{{ answr }}"), "prompt", "'answr', which the targets query does not return"),
    (lambda r: r.replace("{{ answer }}", "{{ answer.words.first }}"), "prompt", "cannot be rendered for target"),
    (lambda r: r.replace("{{ answer }}", "{% if %}"), "prompt", "not a valid Jinja2 template"),
    (lambda r: r.replace("labels: [right, wrong]", "labels: []"), "labels", "must be a non-empty list of labels"),
    (lambda r: r + "scale: [0, 10]\n", "labels", "not both or neither"),
    (lambda r: r.replace("labels: [right, wrong]\n", ""), "scale", "not both or neither"),
    (lambda r: r.replace("event_id as target_id", "event_id as id"), "targets", "must return a `target_id` column"),
    (lambda r: r.replace("event_id as target_id", "run_id as target_id"), "targets", "returned more than once"),
    (lambda r: r.replace("from events", "from no_such_view"), "targets", "the query failed"),
    (lambda r: r.replace("anthropic:claude-haiku-4.5", "mistral:large"), "judges", "unknown provider 'mistral'"),
    (lambda r: r.replace("version: 1\n", ""), "version", "is required"),
])
def test_a_bad_rubric_is_refused_before_anything_is_asked_or_written(untouched_store, tmp_path, change, field, says):
    wh = untouched_store
    rubric = rubric_file(tmp_path, change(LABEL_RUBRIC))
    version = store_version(wh)
    with FakeJudge() as fake:
        result = tracewh("judge", rubric, "-w", wh, env=judge_env(fake, tmp_path))
        assert fake.requests() == 0
    assert result.code == 2, result.err
    assert len(result.err.strip().splitlines()) == 1
    assert str(rubric) in result.err and f"field '{field}'" in result.err and says in " ".join(result.err.split())
    assert store_version(wh) == version


def test_missing_api_key_is_one_line_and_asks_nothing(untouched_store, tmp_path):
    wh, version = untouched_store, store_version(untouched_store)
    with FakeJudge() as fake:
        env = {k: v for k, v in judge_env(fake, tmp_path).items() if k != "ANTHROPIC_API_KEY"}
        result = tracewh("judge", rubric_file(tmp_path), "-w", wh, env=env)
        assert fake.requests() == 0
    assert result.code == 2 and "anthropic:claude-haiku-4.5" in result.err and len(result.err.strip().splitlines()) == 1
    assert store_version(wh) == version


def test_scale_rubric_and_the_agreement_views_with_two_judges_and_two_labellers(tmp_path):
    """The lead's views over this command's events: two fake judges, two people."""
    wh = build_store(tmp_path, n=6)
    with FakeJudge() as fake:
        # the judges agree on tasks 1-4 and disagree on 5-6
        fake.decide = lambda model, prompt, space: {
            "label": "wrong" if ("number 5" in prompt and model == "gpt-5-nano") or "number 6" in prompt and
                                model != "gpt-5-nano" else "right", "reason": "r"}
        tracewh("judge", rubric_file(tmp_path), "-w", wh, env=judge_env(fake, tmp_path), check=True)
    labels = tmp_path / "labels.csv"
    targets = [r["target_id"] for r in rows(wh, "select target_id from labels where rater = 'openai:gpt-5-nano' "
                                                "order by task_id")]
    lines = ["target_id,rubric,label,annotator,note"]
    lines += [f"{t},verdicts,right,ann," for t in targets]
    lines += [f"{t},verdicts,{'wrong' if i == 0 else 'right'},bob,checked" for i, t in enumerate(targets)]
    labels.write_text("\n".join(lines) + "\n")
    tracewh("label", "--from", labels, "-w", wh, env=os.environ | {"TRACEWH_HOME": str(tmp_path / "home")}, check=True)

    pairs = {(r["rater_a"], r["rater_b"]): (r["n"], r["agreement"])
             for r in rows(wh, "select * from label_agreement where rubric = 'verdicts'")}
    assert pairs[("ann", "bob")] == (6, pytest.approx(5 / 6))
    assert pairs[("anthropic:claude-haiku-4.5", "openai:gpt-5-nano")] == (6, pytest.approx(4 / 6))
    vs_human = {r["judge"]: r["n"] for r in rows(wh, "select * from judge_vs_human where rubric = 'verdicts'")}
    assert vs_human == {"anthropic:claude-haiku-4.5": 5, "openai:gpt-5-nano": 5}  # the tie on task 1 is left out
    costs = {r["judge"]: r for r in rows(wh, "select * from judge_costs where rubric = 'verdicts'")}
    assert {j: (c["calls"], c["invalid"], c["unpriced"]) for j, c in costs.items()} == {
        "anthropic:claude-haiku-4.5": (6, 0, 0), "openai:gpt-5-nano": (6, 0, 0)}
    assert all(c["cost_usd"] > 0 for c in costs.values())


def test_scale_rubric_against_a_numeric_reference(tmp_path):
    wh = build_store(tmp_path, n=5)
    scale = LABEL_RUBRIC.replace("labels: [right, wrong]", "scale: [0, 100]").replace(
        "payload ->> '$.gold' as reference", "seq * 10 as reference")
    with FakeJudge() as fake:
        fake.decide = lambda model, prompt, space: {"score": int(prompt.split("number ")[1].split()[0]) * 20, "reason": "r"}
        tracewh("judge", rubric_file(tmp_path, scale), "-w", wh, env=judge_env(fake, tmp_path), check=True)
    fit = rows(wh, "select judge, n, pearson, spearman from judge_vs_reference where rubric = 'verdicts' order by judge")
    assert [(r["n"], r["pearson"], r["spearman"]) for r in fit] == [(5, pytest.approx(1.0), pytest.approx(1.0))] * 2


EXAMPLES = Path(__file__).parents[1] / "examples" / "rubrics"


def test_the_example_rubrics_judge_the_demo_store(tmp_path):
    """examples/rubrics/ target the demo store's real views and columns: each one's query runs,
    its prompt renders, and its judges' answers land in the views."""
    home = tmp_path / "home"
    tracewh("demo", "--tasks", "12", env=os.environ | {"TRACEWH_HOME": str(home)}, check=True)
    wh = home / "demo" / "warehouse"
    # DELEGATE-52's; tests/test_paper_rubrics.py runs every example rubric with its docs page
    examples = sorted(EXAMPLES.glob("d52_*.yaml"))
    assert {p.stem for p in examples} == {"d52_compliance", "d52_round_trip"}
    with FakeJudge() as fake:
        for example in examples:
            tracewh("judge", example, "-w", wh, "--limit", "2", env=judge_env(fake, tmp_path), check=True)
    judged = rows(wh, "select rubric, count(*) as n, count(reference) as with_reference from labels group by rubric "
                      "order by rubric")
    assert [(r["rubric"], r["n"], r["with_reference"]) for r in judged] == [
        ("d52_compliance", 4, 4), ("d52_round_trip", 2, 2)]


def test_calls_that_keep_failing_are_counted_not_stored_and_asked_again_next_run(tmp_path):
    wh = build_store(tmp_path, n=2)
    one_judge = LABEL_RUBRIC.replace("[openai:gpt-5-nano, anthropic:claude-haiku-4.5]", "[openai:gpt-5-nano]")
    rubric = rubric_file(tmp_path, one_judge)
    with FakeJudge() as fake:
        fake.fail_next(500, 7)  # the first call: its try and six retries
        failed = tracewh("judge", rubric, "-w", wh, "--concurrency", "1", "-f", "json", env=judge_env(fake, tmp_path))
        assert failed.code == 1 and "1 call failed after retries" in failed.err and "(500)" in failed.err
        assert (json.loads(failed.out)["asked"], json.loads(failed.out)["failed"]) == (1, 1)
        again = tracewh("judge", rubric, "-w", wh, "-f", "json", env=judge_env(fake, tmp_path), check=True)
        assert (json.loads(again.out)["asked"], json.loads(again.out)["cached"]) == (1, 1)
    assert rows(wh, "select count(*) as n from judgments")[0]["n"] == 2


def test_an_error_asking_again_cannot_fix_stops_the_run_in_one_line(tmp_path):
    wh = build_store(tmp_path, n=3)
    one_judge = LABEL_RUBRIC.replace("[openai:gpt-5-nano, anthropic:claude-haiku-4.5]", "[openai:gpt-5-nano]")
    with FakeJudge() as fake:
        fake.fail_next(401, 10)
        result = tracewh("judge", rubric_file(tmp_path, one_judge), "-w", wh, "--concurrency", "1",
                         env=judge_env(fake, tmp_path))
        assert fake.requests() == 1  # not retried, and nothing more asked
    assert result.code == 2 and len(result.err.strip().splitlines()) == 1
    assert "stopped: openai:gpt-5-nano: AuthenticationError (401)" in result.err
