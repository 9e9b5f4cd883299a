"""The judging views' statistics against the libraries researchers check them with.

Random ratings (seeded): raters that skip targets, labels shared by everyone, ties, an LLM
judge beside humans, corrected labels. Each statistic of `label_agreement`,
`rater_agreement`, `majority_vote`, `judge_vs_human`, `majority_vs_human` and
`judge_vs_reference` must equal scikit-learn's cohen_kappa_score, statsmodels' fleiss_kappa,
the `krippendorff` package and scipy's pearsonr / spearmanr on the same ratings (NaN there
is NULL here). The views are SQL; these libraries are test-only references.
"""

from __future__ import annotations

import itertools
import math
import random
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import krippendorff
import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa
from test_views import write_events

from tracewh.queries.engine import ViewCreator, define_events_raw

SEEDS = range(16)
LABEL_SEEDS = [s for s in SEEDS if s % 3 != 2]  # the seeds whose rubric has labels (_ratings)


def _label_event(rubric: str, target: str, rater: str, kind: str, *, label: str | None = None,
                 value: float | None = None, reference: Any = None, seq: int, supersedes: str | None = None,
                 valid: bool = True) -> dict[str, Any]:
    payload = {"rubric": rubric, "target_id": target, "target_run_id": "r1", "target_task_id": target,
               "rater": rater, "rater_kind": kind, "valid": valid}
    payload |= {k: v for k, v in {"label": label, "value": value, "reference": reference}.items() if v is not None}
    return {"event_id": f"j{seq}", "run_id": f"{'judge' if kind == 'llm' else 'labels'}:{rubric}",
            "benchmark": "judging", "kind": "judgment", "seq": seq, "task_id": target, "agent": rater,
            "ts": f"2026-01-01T00:{seq // 60 % 60:02d}:{seq % 60:02d}Z", "supersedes": supersedes, "payload": payload}


def _ratings(seed: int) -> tuple[dict[str, dict[str, Any]], dict[str, str], dict[str, Any], bool]:
    """rater -> target -> label or value (current ones), rater -> kind, target -> reference, nominal?"""
    rng = random.Random(seed)
    nominal = seed % 3 != 2  # LABEL_SEEDS
    categories = ["a", "b", "c"][: rng.choice([1, 2, 3, 3])] if nominal else None
    targets = [f"t{i}" for i in range(rng.randint(3, 14))]
    raters = {f"h{i}": "human" for i in range(rng.randint(2, 4))} | {f"openai:judge{i}": "llm" for i in range(rng.randint(1, 2))}
    truth = {t: rng.choice(categories) if nominal else float(rng.randint(0, 4) * 25) for t in targets}
    ratings: dict[str, dict[str, Any]] = {}
    for rater in raters:
        ratings[rater] = {}
        for t in targets:
            if rng.random() < 0.2:  # this rater skipped the target
                continue
            if nominal:
                ratings[rater][t] = truth[t] if rng.random() < 0.6 else rng.choice(categories)
            else:
                ratings[rater][t] = truth[t] if rng.random() < 0.5 else float(rng.randint(0, 4) * 25)
    references = {t: truth[t] if rng.random() < 0.7 else (rng.choice(categories) if nominal else 50.0) for t in targets}
    return ratings, raters, references, nominal


def _events(ratings: dict[str, dict[str, Any]], raters: dict[str, str], references: dict[str, Any],
            nominal: bool, seed: int) -> list[dict[str, Any]]:
    """The ratings as judgment events, with noise that must not count: a human's first label later
    corrected (supersedes), and a judge's invalid answer."""
    rng, events = random.Random(seed + 1000), []
    for rater, given in ratings.items():
        for target, rating in given.items():
            field = {"label": rating} if nominal else {"value": rating}
            if raters[rater] == "human" and rng.random() < 0.3:
                events.append(_label_event("r", target, rater, "human", seq=len(events) + 1,
                                           **({"label": "stale"} if nominal else {"value": 999.0})))
                field["supersedes"] = events[-1]["event_id"]
            if raters[rater] == "llm" and rng.random() < 0.2:
                events.append(_label_event("r", target, rater, "llm", seq=len(events) + 1, valid=False))
            events.append(_label_event("r", target, rater, raters[rater], seq=len(events) + 1,
                                       reference=references[target], **field))
    return events


def _query(events: list[dict[str, Any]], tmp_path: Path, sql: str) -> list[dict[str, Any]]:
    con = duckdb.connect()
    define_events_raw(con, [str(write_events(events, tmp_path / "events.parquet", "agreement"))])
    ViewCreator(con).for_query(sql)
    cursor = con.execute(sql)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def _same(got: float | None, want: float) -> bool:
    if want is None or (isinstance(want, float) and math.isnan(want)):
        return got is None
    return got is not None and got == pytest.approx(want, rel=1e-9, abs=1e-12)


def _kappa(a: list[Any], b: list[Any]) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(cohen_kappa_score([str(x) for x in a], [str(x) for x in b]))


def _spearman(a: list[float], b: list[float]) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.spearmanr(a, b).statistic) if len(a) > 1 else math.nan


@pytest.mark.parametrize("seed", SEEDS)
def test_label_agreement_matches_sklearn_and_scipy(seed: int, tmp_path: Path) -> None:
    ratings, raters, references, nominal = _ratings(seed)
    rows = _query(_events(ratings, raters, references, nominal, seed), tmp_path, "select * from label_agreement")
    got = {(r["rater_a"], r["rater_b"]): r for r in rows}
    expected_pairs = 0
    for a, b in itertools.combinations(sorted(ratings), 2):
        common = sorted(set(ratings[a]) & set(ratings[b]))
        if not common:
            assert (a, b) not in got
            continue
        expected_pairs += 1
        xa, xb = [ratings[a][t] for t in common], [ratings[b][t] for t in common]
        row = got[(a, b)]
        assert row["n"] == len(common)
        assert row["agreement"] == pytest.approx(np.mean([x == y for x, y in zip(xa, xb)]))
        if nominal:
            assert _same(row["cohen_kappa"], _kappa(xa, xb)), (a, b, row, xa, xb)
            assert row["spearman"] is None
        else:
            assert _same(row["spearman"], _spearman(xa, xb)), (a, b, row, xa, xb)
    assert len(rows) == expected_pairs


@pytest.mark.parametrize("seed", SEEDS)
def test_rater_agreement_matches_statsmodels_and_krippendorff(seed: int, tmp_path: Path) -> None:
    ratings, raters, references, nominal = _ratings(seed)
    [row] = _query(_events(ratings, raters, references, nominal, seed), tmp_path, "select * from rater_agreement")
    names = sorted(ratings)
    targets = sorted(set().union(*(set(r) for r in ratings.values())))
    complete = [t for t in targets if all(t in ratings[r] for r in names)]
    assert (row["raters"], row["n_targets"]) == (len(names), len(complete))

    codes = {c: i for i, c in enumerate(sorted({v for r in ratings.values() for v in r.values()}, key=str))}
    if nominal:
        table = aggregate_raters(np.array([[codes[ratings[r][t]] for r in names] for t in complete]))[0] \
            if complete else None
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            want = float(fleiss_kappa(table)) if complete else math.nan
        assert _same(row["fleiss_kappa"], want), (row, want)
    else:
        assert row["fleiss_kappa"] is None

    data = np.array([[(codes[ratings[r][t]] if nominal else ratings[r][t]) if t in ratings[r] else np.nan
                      for t in targets] for r in names], dtype=float)
    pairable = sum(1 for t in targets if sum(t in ratings[r] for r in names) >= 2)
    values = {v for t in targets if sum(t in ratings[r] for r in names) >= 2 for r in names if t in ratings[r]
              for v in [ratings[r][t]]}
    if pairable and len(values) > 1:
        want = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal" if nominal else "interval")
        assert _same(row["krippendorff_alpha"], float(want)), (row, want)
    else:  # no variation at all: alpha is undefined
        assert row["krippendorff_alpha"] is None


@pytest.mark.parametrize("seed", LABEL_SEEDS)
def test_majority_vote_and_judge_vs_human(seed: int, tmp_path: Path) -> None:
    ratings, raters, references, nominal = _ratings(seed)
    assert nominal  # majorities and judge-vs-human are for label rubrics
    events = _events(ratings, raters, references, nominal, seed)
    votes = {r["target_id"]: r for r in _query(events, tmp_path, "select * from majority_vote")}
    targets = sorted(set().union(*(set(r) for r in ratings.values())))
    for t in targets:
        counts = Counter(ratings[r][t] for r in ratings if t in ratings[r])
        (top, n), *rest = counts.most_common()
        tie = bool(rest) and rest[0][1] == n
        assert (votes[t]["raters"], votes[t]["votes"], votes[t]["tie"]) == (sum(counts.values()), n, tie)
        assert votes[t]["label"] == (None if tie else top)

    rows = {r["judge"]: r for r in _query(events, tmp_path, "select * from judge_vs_human")}
    humans = [r for r in ratings if raters[r] == "human"]
    for judge in [r for r in ratings if raters[r] == "llm"]:
        pairs = []
        for t in targets:
            counts = Counter(ratings[h][t] for h in humans if t in ratings[h]).most_common()
            if not counts or (len(counts) > 1 and counts[1][1] == counts[0][1]) or t not in ratings[judge]:
                continue
            pairs.append((ratings[judge][t], counts[0][0]))
        if not pairs:
            assert judge not in rows
            continue
        row = rows[judge]
        assert row["n"] == len(pairs)
        assert row["agreement"] == pytest.approx(np.mean([a == b for a, b in pairs]))
        assert _same(row["cohen_kappa"], _kappa(*zip(*pairs)))


@pytest.mark.parametrize("seed", SEEDS)
def test_judge_vs_reference_matches_scipy(seed: int, tmp_path: Path) -> None:
    ratings, raters, references, nominal = _ratings(seed)
    rows = {r["judge"]: r for r in
            _query(_events(ratings, raters, references, nominal, seed), tmp_path, "select * from judge_vs_reference")}
    for rater, given in ratings.items():
        targets = sorted(given)
        row = rows[rater]
        assert row["n"] == len(targets)
        if nominal:
            assert row["agreement"] == pytest.approx(np.mean([given[t] == references[t] for t in targets]))
            assert row["pearson"] is None
            continue
        x, y = [given[t] for t in targets], [references[t] for t in targets]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = float(stats.pearsonr(x, y).statistic) if len(x) > 1 else math.nan
        assert _same(row["pearson"], r)
        assert _same(row["spearman"], _spearman(x, y))
        assert _same(row["r2"], r * r)


def _strict_majority(labels: list[Any]) -> Any:
    """The most frequent label, or None on a tie or when there are none."""
    counts = Counter(labels).most_common()
    if not counts or (len(counts) > 1 and counts[1][1] == counts[0][1]):
        return None
    return counts[0][0]


@pytest.mark.parametrize("seed", LABEL_SEEDS)
def test_majority_vs_human_matches_sklearn(seed: int, tmp_path: Path) -> None:
    ratings, raters, references, nominal = _ratings(seed)
    events = _events(ratings, raters, references, nominal, seed)
    # The evaluated model of each target: two models and targets without one (None). People's
    # labels of every other target name no model: the view takes it from the judges' labels.
    model_of = {f"t{i}": [f"m{seed % 2}", "m9", None][i % 3] for i in range(20)}
    for event in events:
        target, human = event["payload"]["target_id"], event["payload"]["rater_kind"] == "human"
        if model_of[target] and not (human and int(target[1:]) % 2):
            event["payload"]["target_model"] = model_of[target]
    rows = {r["model"]: r for r in _query(events, tmp_path, "select * from majority_vs_human")}

    targets = sorted(set().union(*(set(r) for r in ratings.values())))
    pairs: dict[Any, list[tuple[Any, Any]]] = {}
    for t in targets:
        llm = _strict_majority([ratings[r][t] for r in ratings if raters[r] == "llm" and t in ratings[r]])
        human = _strict_majority([ratings[r][t] for r in ratings if raters[r] == "human" and t in ratings[r]])
        if llm is not None and human is not None:
            pairs.setdefault(model_of[t], []).append((llm, human))
    assert set(rows) == set(pairs)
    for model, compared in pairs.items():
        row = rows[model]
        assert row["n"] == len(compared)
        assert row["agreement"] == pytest.approx(np.mean([a == b for a, b in compared]))
        assert _same(row["cohen_kappa"], _kappa(*zip(*compared))), (model, row, compared)
