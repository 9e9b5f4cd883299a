"""A repeated query is answered from memory while the store stays at its version
(queries/result_cache.py); a commit makes a new version, so no answer is ever older than what
the query would read now."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import tracewh as tw
from tracewh.demo.agent_runs import write_demo_runs
from tracewh.queries.result_cache import ResultCache, repeatable


@pytest.fixture
def serve(tmp_path, new_service) -> Callable[..., tuple[TestClient, Path, list[Path]]]:
    """`serve(**config)`: the service (`config`: ServiceConfig's) over a store holding the first demo
    run, and the other runs, for later commits."""
    def make(**config: Any) -> tuple[TestClient, Path, list[Path]]:
        runs = write_demo_runs(tmp_path / "runs", tasks=2)
        wh = tw.open(tmp_path / "wh")
        wh.ingest(runs[:1])
        return new_service(wh.path, **config), wh.path, runs[1:]
    return make


@pytest.fixture
def served(serve) -> tuple[TestClient, Path, list[Path]]:
    return serve()


def sql(client: TestClient, query: str) -> list[dict]:
    answer = client.post("/sql", json={"query": query})
    assert answer.status_code == 200, answer.text
    return answer.json()["rows"]


def test_a_repeat_is_answered_from_memory_until_the_next_commit(served):
    client, store, later = served
    cache = client.app.state.query_workers.cache
    count = "select count(*) as n from events"
    first = sql(client, count)
    assert sql(client, count) == first and (cache.runs, cache.hits) == (1, 1)
    tw.open(store).ingest(later[:1])  # a new version: the same text is another query now
    after = sql(client, count)
    assert after[0]["n"] > first[0]["n"] and (cache.runs, cache.hits) == (2, 1)
    assert client.get("/runs").json() == client.get("/runs").json() and cache.hits == 2  # parameters, too


def test_a_query_of_the_clock_or_of_chance_runs_every_time(served):
    client, _, _ = served
    cache = client.app.state.query_workers.cache
    draws = {sql(client, "select random() as r")[0]["r"] for _ in range(3)}
    assert len(draws) == 3 and cache.hits == 0 and cache.runs == 3


def test_an_error_is_not_kept(served):
    client, _, _ = served
    cache = client.app.state.query_workers.cache
    for _ in range(2):  # fails as it runs, in the worker (a time limit, say, depends on the load)
        assert client.post("/sql", json={"query": "select cast(run_id as integer) from runs"}).status_code == 400
    assert cache.hits == 0 and cache.runs == 2


def test_a_service_without_a_cache_runs_every_query(serve):
    client, _, _ = serve(result_cache_bytes=0)
    for _ in range(2):
        sql(client, "select count(*) as n from runs")
    cache = client.app.state.query_workers.cache
    assert (cache.runs, cache.hits) == (2, 0)


@pytest.mark.parametrize(("query", "kept"), [
    ("select * from dcb_quality", True),
    ("select year(first_ts) as y, count(*) from runs group by 1", True),  # the engine's settings are locked
    ("select * from inspect_samples", True),  # a view's name is not the word `sample`
    ("select now()", False),
    ("select current_timestamp", False),
    ("select CURRENT_DATE - 1", False),
    ("select uuid()", False),
    ("select gen_random_uuid()", False),
    ("select * from events using sample 10", False),
    ("select * from events tablesample 5%", False),
    ("select random() < 0.5", False),
])
def test_which_queries_give_the_same_answer_every_time(query, kept):
    assert repeatable(query) is kept


def rows(text: str) -> tuple[tuple[str], bytes]:
    return ("rows",), text.encode()


def test_identical_queries_at_once_run_once():
    cache, started, release, ran = ResultCache(), threading.Event(), threading.Event(), []

    def run():
        ran.append(1)
        started.set()
        release.wait(10)
        return rows("answer")

    answers = []
    first = threading.Thread(target=lambda: answers.append(cache.answer("k", run)))
    first.start()
    started.wait(10)
    second = threading.Thread(target=lambda: answers.append(cache.answer("k", run)))
    second.start()
    release.set()
    first.join(10), second.join(10)
    assert answers == [rows("answer")] * 2 and len(ran) == 1 and cache.hits == 1


def test_when_the_first_run_fails_the_waiting_ones_run_their_own():
    cache, calls = ResultCache(), []

    def failing():
        calls.append("failed")
        raise RuntimeError("worker killed")

    with pytest.raises(RuntimeError):
        cache.answer("k", failing)
    assert cache.answer("k", lambda: rows("now")) == rows("now") and cache.runs == 2


def test_the_least_recently_used_answers_go_past_the_memory_bound():
    cache = ResultCache(max_bytes=10, entry_bytes=6)
    cache.answer("a", lambda: rows("aaaa"))
    cache.answer("b", lambda: rows("bbbb"))
    cache.answer("a", lambda: rows("unused"))  # a hit: "a" is now the most recent
    cache.answer("c", lambda: rows("cccc"))  # 12 bytes: "b" goes
    cache.answer("big", lambda: rows("x" * 7))  # over one answer's bound: not kept
    assert cache.answer("a", lambda: rows("again")) == rows("aaaa")
    assert cache.answer("b", lambda: rows("b again")) == rows("b again")
    assert cache.answer("big", lambda: rows("y")) == rows("y")
