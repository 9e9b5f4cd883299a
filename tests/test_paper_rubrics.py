"""The papers' judge analyses (docs/judging-papers.md) run end to end on one demo store.

Every rubric in examples/rubrics/ is judged through `tracewh judge` by the fake judge server
(tests/fake_judge.py: the real openai client on 127.0.0.1), people's labels come in through
`tracewh label --from` and a correction through `tracewh label`, and then every SQL query of
the docs page (read from the markdown, so page and test cannot drift) must give what scipy
and scikit-learn give on the same ratings, read raw from the `labels` and `judgments` views.
"""

from __future__ import annotations

import csv
import hashlib
import math
import os
import re
import warnings
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fake_judge import FakeJudge, default_decision
from helpers import tracewh
from scipy import stats
from sklearn.metrics import cohen_kappa_score

import tracewh as tw
from tracewh.demo.build import build_demo

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "judging-papers.md"
RUBRICS = sorted((REPO / "examples" / "rubrics").glob("*.yaml"))
SAMPLE = 40  # targets judged per rubric (dcb_profile_ratings has 36: all of them)
ANNOTATORS = ("ann", "bob", "cy")


def _hash(*parts: str) -> int:
    return int(hashlib.sha256("\0".join(parts).encode()).hexdigest(), 16)


def decide(model: str, prompt: str, space: dict[str, Any]) -> dict[str, Any] | str:
    """The fake's deterministic answers (a hash of model and prompt), one in 11 not JSON: the
    analyses must leave invalid answers out of every statistic and count them as calls."""
    if _hash(model, prompt, "invalid") % 11 == 0:
        return "I cannot decide."
    return default_decision(model, prompt, space)


def doc_queries() -> dict[str, str]:
    """The page's SQL blocks by name (```sql NAME)."""
    found = re.findall(r"^```sql(?: (\w+))?\n(.*?)^```", DOC.read_text(), flags=re.M | re.S)
    assert all(name for name, _ in found), "every SQL block of docs/judging-papers.md is named: ```sql NAME"
    names = [name for name, _ in found]
    assert len(names) == len(set(names)), names
    return dict(found)


def rows(wh: Path, sql: str) -> list[dict[str, Any]]:
    return tw.open(wh).query(sql).arrow().to_pylist()


def human_labels(targets: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Three annotators on two of every three items, two on the rest (their ties are left out
    of the majorities); each mostly agrees with the benchmark's recorded verdict."""
    out = []
    for i, t in enumerate(sorted(targets, key=lambda t: t["target_id"])):
        for annotator in ANNOTATORS[: 2 if i % 3 == 2 else 3]:
            label = t["reference"]
            if _hash(t["target_id"], annotator) % 4 == 0:
                label = "fail" if label == "pass" else "pass"
            out.append({"target_id": t["target_id"], "rubric": "ecb_agent_work", "label": label,
                        "annotator": annotator, "note": ""})
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("papers")
    wh = build_demo(tmp / "demo store", tasks=2)[0].path
    with FakeJudge() as fake:
        fake.decide = decide
        env = os.environ | fake.env() | {"TRACEWH_HOME": str(tmp / "home")}
        for rubric in RUBRICS:
            tracewh("judge", rubric, "-w", wh, "--sample", SAMPLE, "--seed", 1, "--concurrency", 8, env=env,
                    check=True)
    judged = rows(wh, "select target_id, any_value(reference) as reference from labels "
                      "where rubric = 'ecb_agent_work' and rater_kind = 'llm' group by target_id")
    labels = human_labels(judged)
    with (tmp / "ecb labels.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(labels[0]))
        writer.writeheader()
        writer.writerows(labels)
    tracewh("label", "-w", wh, "--from", tmp / "ecb labels.csv", check=True)
    first = labels[0]  # a correction: ann's later label supersedes her first
    tracewh("label", "-w", wh, "--rubric", "ecb_agent_work", "--target", first["target_id"], "--annotator",
            first["annotator"], "--label", "fail" if first["label"] == "pass" else "pass", check=True)
    return wh


@pytest.fixture(scope="module")
def labels(store) -> list[dict[str, Any]]:
    return rows(store, "select * from labels")


def of(labels: list[dict[str, Any]], rubric: str, kind: str = "llm") -> list[dict[str, Any]]:
    return [r for r in labels if r["rubric"] == rubric and r["rater_kind"] == kind]


def same(got: Any, want: float) -> bool:
    """A view's number against the library's: NaN there is NULL here."""
    if want is None or (isinstance(want, float) and math.isnan(want)):
        return got is None
    return got is not None and got == pytest.approx(want, rel=1e-9, abs=1e-12)


def spearman(x: list[float], y: list[float]) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.spearmanr(x, y).statistic) if len(x) > 1 else math.nan


def pearson(x: list[float], y: list[float]) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.pearsonr(x, y).statistic) if len(x) > 1 else math.nan


def kappa(a: list[str], b: list[str]) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(cohen_kappa_score(a, b))


def strict_majority(given: list[str]) -> str | None:
    counts = Counter(given).most_common()
    if not counts or (len(counts) > 1 and counts[1][1] == counts[0][1]):
        return None
    return counts[0][0]


def by_judge(items: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped = defaultdict(list)
    for r in items:
        grouped[r["rater"]].append(r)
    return grouped


# One check per SQL block of the page: (the block's rows, every current label, the store).

def check_d52_compliance_by_model(got, labels, store):
    counts = Counter((r["rater"], r["model"], r["label"]) for r in of(labels, "d52_compliance"))
    totals = Counter((r["rater"], r["model"]) for r in of(labels, "d52_compliance"))
    want = sorted(((j, m, c, n) for (j, m, c), n in counts.items()), key=lambda r: (r[0], r[1], -r[3], r[2]))
    assert [(r["judge"], r["model"], r["category"], r["steps"]) for r in got] == want
    for r in got:  # the share in points, to one decimal
        assert r["pct"] == pytest.approx(100 * r["steps"] / totals[r["judge"], r["model"]], abs=0.05 + 1e-9)
    assert len({r["model"] for r in got}) > 1 and len({r["category"] for r in got}) > 2


def check_d52_round_trip_vs_rs(got, labels, store):
    judged = rows(store, "select rater, valid, cost_usd from judgments where rubric = 'd52_round_trip'")
    assert [r["judge"] for r in got] == sorted({r["rater"] for r in judged})
    for row in got:
        rated = [r for r in of(labels, "d52_round_trip") if r["rater"] == row["judge"]]
        x, y = [r["value"] for r in rated], [float(r["reference"]) for r in rated]
        calls = [r for r in judged if r["rater"] == row["judge"]]
        assert row["n"] == len(rated) and same(row["pearson"], pearson(x, y)) and same(row["spearman"], spearman(x, y))
        assert same(row["variance_explained"], pearson(x, y) ** 2) and row["pearson"] is not None
        assert (row["calls"], row["invalid"]) == (len(calls), sum(not r["valid"] for r in calls))
        spent = sum(r["cost_usd"] for r in calls)
        assert same(row["cost_usd"], spent) and same(row["cost_per_1000"], 1000 * spent / len(calls))


def check_dcb_retag_share(got, labels, store):
    judges = by_judge(of(labels, "dcb_retag"))
    assert [r["judge"] for r in got] == sorted(judges)
    for row in got:
        rated = judges[row["judge"]]
        assert row["steps"] == len(rated)
        assert same(row["share_seven"], np.mean([r["label"] != "other" for r in rated]))
        assert same(row["agreement_with_tagger"], np.mean([r["label"] == r["reference"] for r in rated]))
        assert 0 < row["share_seven"] < 1


def check_dcb_retag_confusion(got, labels, store):
    counts = Counter((r["rater"], r["reference"], r["label"]) for r in of(labels, "dcb_retag"))
    want = sorted(((j, t, llm, n) for (j, t, llm), n in counts.items()), key=lambda r: (r[0], r[1], -r[3], r[2]))
    assert [(r["judge"], r["tagger"], r["llm"], r["steps"]) for r in got] == want


def check_dcb_retag_other_tags(got, labels, store):
    want = sorted((r["rater"], r["target_id"], r["task_id"], r["reason"])
                  for r in of(labels, "dcb_retag") if r["label"] == "other")
    assert [(r["judge"], r["target_id"], r["task_id"], r["reason"]) for r in got] == want and want


def check_dcb_profile_rho(got, labels, store):
    judges = {j: {r["target_id"]: r["value"] for r in rated}
              for j, rated in by_judge(of(labels, "dcb_profile_ratings")).items()}
    assert len(judges) == 2 and len(got) == 1
    (a, ratings_a), (b, ratings_b) = sorted(judges.items())
    common = sorted(set(ratings_a) & set(ratings_b))
    [row] = got
    assert (row["rater_a"], row["rater_b"], row["n"]) == (a, b, len(common))
    assert same(row["spearman"], spearman([ratings_a[t] for t in common], [ratings_b[t] for t in common]))
    assert row["spearman"] is not None and len(common) > 20


def check_dcb_profile_vs_pass_rate(got, labels, store):
    judges = by_judge(of(labels, "dcb_profile_ratings"))
    assert [r["judge"] for r in got] == sorted(judges)
    for row in got:
        rated = judges[row["judge"]]
        assert row["n"] == len(rated)
        assert same(row["spearman"], spearman([r["value"] for r in rated], [float(r["reference"]) for r in rated]))


def check_ecb_majority_by_model(got, labels, store):
    votes = defaultdict(list)
    model = {}
    for r in of(labels, "ecb_agent_work"):
        votes[r["target_id"]].append(r["label"])
        model[r["target_id"]] = r["model"]
    want = defaultdict(lambda: [0, 0, 0, []])  # items, passed, tied, decided outcomes
    for target, given in votes.items():
        pass_votes, fail_votes = given.count("pass"), given.count("fail")
        w = want[model[target]]
        w[0] += 1
        w[1] += pass_votes > fail_votes
        w[2] += pass_votes == fail_votes
        if pass_votes != fail_votes:
            w[3].append(pass_votes > fail_votes)
    assert [r["model"] for r in got] == sorted(want) and len(want) > 1
    for row in got:
        items, passed, tied, decided = want[row["model"]]
        assert (row["items"], row["passed"], row["tied"]) == (items, passed, tied)
        assert same(row["pass_rate"], float(np.mean(decided)) if decided else math.nan)
    assert sum(r["tied"] for r in got) > 0  # an invalid answer left an even vote somewhere


def check_ecb_judges_vs_benchmark(got, labels, store):
    judges = by_judge(of(labels, "ecb_agent_work"))
    humans = by_judge(of(labels, "ecb_agent_work", "human"))
    assert [(r["judge"], r["rater_kind"]) for r in got] == \
        [(j, "llm") for j in sorted(judges)] + [(h, "human") for h in sorted(humans)]
    assert len(judges) == 3 and len(humans) == 3
    for row in got:
        rated = (judges | humans)[row["judge"]]
        assert row["n"] == len(rated)
        assert same(row["agreement"], np.mean([r["label"] == r["reference"] for r in rated]))


def _human_majorities(labels: list[dict[str, Any]]) -> dict[str, str]:
    given = defaultdict(list)
    for r in of(labels, "ecb_agent_work", "human"):
        given[r["target_id"]].append(r["label"])
    return {t: m for t, g in given.items() if (m := strict_majority(g)) is not None}


def check_ecb_majority_vs_human(got, labels, store):
    humans = _human_majorities(labels)
    llm, model = defaultdict(list), {}
    for r in of(labels, "ecb_agent_work"):
        llm[r["target_id"]].append(r["label"])
        model[r["target_id"]] = r["model"]
    pairs = defaultdict(list)
    for target, given in llm.items():
        if (majority := strict_majority(given)) is not None and target in humans:
            pairs[model[target]].append((majority, humans[target]))
    assert [r["model"] for r in got] == sorted(pairs) and len(pairs) > 1
    for row in got:
        compared = pairs[row["model"]]
        assert row["n"] == len(compared)
        assert same(row["agreement"], np.mean([a == b for a, b in compared]))
        assert same(row["cohen_kappa"], kappa(*map(list, zip(*compared)))), (row, compared)
    assert any(r["cohen_kappa"] is not None for r in got)


def check_ecb_judges_vs_human(got, labels, store):
    humans = _human_majorities(labels)
    judges = by_judge(of(labels, "ecb_agent_work"))
    assert [r["judge"] for r in got] == sorted(judges)
    for row in got:
        compared = [(r["label"], humans[r["target_id"]]) for r in judges[row["judge"]] if r["target_id"] in humans]
        assert row["n"] == len(compared)
        assert same(row["agreement"], np.mean([a == b for a, b in compared]))
        assert same(row["cohen_kappa"], kappa(*map(list, zip(*compared))))


CHECKS = {name.removeprefix("check_"): check for name, check in globals().items() if name.startswith("check_")}


def test_every_rubric_is_on_the_page_and_every_query_is_checked():
    text = DOC.read_text()
    for rubric in RUBRICS:
        assert f"tracewh judge examples/rubrics/{rubric.name}" in text, f"{rubric.name} has no command on the page"
    assert set(doc_queries()) == set(CHECKS)


def test_every_rubric_judged_its_targets(store, labels):
    judged = {r["rubric"] for r in labels if r["rater_kind"] == "llm"}
    assert judged == {rubric.stem for rubric in RUBRICS}
    # the correction superseded one label: the view reads the latest, the history keeps both
    [corrected] = [r for r in labels if r["rubric"] == "ecb_agent_work" and r["revisions"] > 0]
    assert corrected["rater_kind"] == "human"
    # some answers were invalid: paid for and counted as calls, never rated
    assert rows(store, "select sum(invalid) as n from judge_costs")[0]["n"] > 0


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_the_papers_query_matches_python(store, labels, name):
    got = rows(store, doc_queries()[name])
    assert got, f"{name}: no rows"
    CHECKS[name](got, labels, store)
