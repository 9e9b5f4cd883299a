"""The MCP server through the SDK's own client: `tracewh mcp` over stdio (a real process) and /mcp
on a real `tracewh serve` over streamable HTTP, on the demo store. The SQL tool refuses what
POST /sql refuses, in the same words; answers past the row or byte cap say so; the label tool
exists only with --allow-labels (stdio) and needs the ingest token (HTTP)."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import serving
from test_sql_guard import REFUSED, SERVICE_REFUSED

import tracewh as tw
from tracewh.analytics.text import json_value
from tracewh.demo.build import build_demo

TOKEN = "mcp-test-token"
# 3 s, not 1: a query worker runs at the lowest CPU priority (queries/isolation.py), and on a CI
# machine busy with the other tests a 0.07 s question once took over 1 s.
LIMITS = ["--row-cap", "20", "--max-response-mb", "1", "--query-seconds", "3"]
ENDLESS = "select count(*) from range(1000000000000) a"  # stopped at the time limit
HOSTILE = [*REFUSED, *(query for query, _ in SERVICE_REFUSED), ENDLESS, "select * from runz"]


class Session:
    """The SDK's ClientSession held open on an event loop in a thread of its own, called from
    the tests synchronously: one server process serves a whole module."""

    def __init__(self, connect: Callable[[], AbstractAsyncContextManager[Any]]):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.stop = asyncio.Event()
        self.ready: asyncio.Future = self.loop.create_future()
        self.held = asyncio.run_coroutine_threadsafe(self._hold(connect), self.loop)
        try:
            self._run(self._ready())
        except BaseException:
            self._stop_loop()
            raise

    async def _ready(self) -> None:
        held = asyncio.wrap_future(self.held)
        await asyncio.wait([self.ready, held], return_when=asyncio.FIRST_COMPLETED)
        if held.done():
            held.result()  # the connection failed: its error

    async def _hold(self, connect: Callable[[], AbstractAsyncContextManager[Any]]) -> None:
        from mcp import ClientSession

        async with connect() as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            self.session = session
            self.ready.set_result(None)
            await self.stop.wait()

    def _run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=120)

    def call(self, tool: str, **arguments: Any) -> tuple[bool, str]:
        """(is_error, the text) of one tool call."""
        result = self._run(self.session.call_tool(tool, arguments))
        return bool(result.is_error), "".join(c.text for c in result.content)

    def ok(self, tool: str, **arguments: Any) -> str:
        error, text = self.call(tool, **arguments)
        assert not error, text
        return text

    def tools(self) -> list[str]:
        return [t.name for t in self._run(self.session.list_tools()).tools]

    def resource(self, uri: str) -> str:
        return self._run(self.session.read_resource(uri)).contents[0].text

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.stop.set)
        try:
            self.held.result(timeout=60)
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


@asynccontextmanager
async def over_stdio(store: Path, *flags: str):
    from mcp import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "tracewh", "mcp", "-w", str(store), *flags])
    async with stdio_client(params) as streams:
        yield streams


@asynccontextmanager
async def over_http(base: str, token: str | None = None):
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http, \
            streamable_http_client(f"{base}/mcp", http_client=http) as streams:
        yield streams


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """The demo store (2 tasks per run), in a folder whose name has a space and an accent."""
    wh, _ = build_demo(tmp_path_factory.mktemp("mcp") / "démo store", tasks=2)
    wh.query("select count(*) from runs")  # the catalog, compiled once
    return wh.path


@pytest.fixture(scope="module")
def stdio(store) -> Iterator[Session]:
    session = Session(lambda: over_stdio(store, *LIMITS))
    yield session
    session.close()


@pytest.fixture(scope="module")
def server(store) -> Iterator[str]:
    """`tracewh serve` with a token, reads open (--public-read), and the stdio session's limits."""
    with serving(store, *LIMITS, "--public-read", token=TOKEN, ingest_ready=True) as base:  # its start-up done
        yield base


@pytest.fixture(scope="module")
def http(server) -> Iterator[Session]:
    """An MCP client of /mcp without the token (reads are open)."""
    session = Session(lambda: over_http(server))
    yield session
    session.close()


def post_sql(base: str, query: str) -> httpx.Response:
    return httpx.post(f"{base}/sql", json={"query": query}, timeout=60)


# -- views and SQL -----------------------------------------------------------------------------------

@pytest.mark.parametrize("door", ["stdio", "http"])
def test_views_are_listed_and_described(door, request):
    session = request.getfixturevalue(door)
    views = session.ok("list_views")
    assert "runs (core)" in views and "dcb_quality (decisionbench)" in views and "run_id varchar" in views
    assert session.ok("list_views", group="delegate52").startswith("d52_")
    described = session.ok("describe_view", name="runs")
    assert "Columns:\n  run_id varchar" in described and "CREATE OR REPLACE VIEW runs AS" in described
    assert "-- cost_usd: the sum over the run's LLM calls" in described  # its documentation
    assert session.call("describe_view", name="nope") == (True, "no view named 'nope'; list_views lists them")


def test_resources_hold_the_event_schema_and_each_views_documentation(stdio):
    assert stdio.resource("tracewh://schema/events").startswith("# The tracewh event schema")
    assert "CREATE OR REPLACE VIEW dcb_quality AS" in stdio.resource("tracewh://views/dcb_quality")
    assert "runs (core)" in stdio.resource("tracewh://views")


@pytest.mark.parametrize("door", ["stdio", "http"])
def test_a_headline_view_by_sql_is_what_post_sql_answers(door, request, server):
    session = request.getfixturevalue(door)
    query = "select model, suite, condition, mean_q from dcb_quality order by all limit 5"
    text = session.ok("sql", query=query)
    rows = post_sql(server, query).json()["rows"]
    lines = text.splitlines()
    assert lines[0] == "| model | suite | condition | mean_q |" and len(rows) == 5
    for line, row in zip(lines[2:7], rows):
        assert line.startswith(f"| {row['model']} | {row['suite']} | {row['condition']} | ")
    assert lines[-1] == "5 rows."
    postgres = session.ok("sql", query="SELECT COUNT(*)::INT AS n FROM runs", dialect="postgres")
    assert f"| {post_sql(server, 'select count(*) as n from runs').json()['rows'][0]['n']} |" in postgres


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_are_refused_as_post_sql_refuses_them(query, stdio, http, server, store):
    answer = post_sql(server, query)
    assert answer.status_code in (400, 408), answer.text
    detail = answer.json()["detail"]
    assert http.call("sql", query=query) == (True, detail)
    error, said = stdio.call("sql", query=query)
    assert error and said == detail.replace("<store>", str(store))
    assert stdio.ok("sql", query="select 41 + 1 as n").splitlines()[2] == "| 42 |"  # and the server goes on


@pytest.mark.parametrize("door", ["stdio", "http"])
def test_an_oversized_answer_is_cut_at_the_caps_and_says_so(door, request, server):
    session = request.getfixturevalue(door)
    shown = session.ok("sql", query="select * from range(100)", limit=1000)
    assert len(shown.splitlines()) == 2 + 20 + 2
    assert shown.endswith("truncated: the first 20 rows; the query has more (this is the service's row cap, 20, "
                          "or aggregate in SQL).\n")
    assert "raise `limit`" in session.ok("sql", query="select * from range(100)", limit=5)
    wide = "select i, repeat('x', 200000) as s from range(20) t(i)"  # 4 MB of text against a 1 MB cap
    cut = session.ok("sql", query=wide)
    served = post_sql(server, wide).json()
    assert served["truncated"] is True and 0 < len(served["rows"]) < 20
    assert cut.count("| x") == len(served["rows"]) and "…" in cut  # long cells are cut for reading
    assert f"truncated: the first {len(served['rows'])} rows, where the answer reached the byte cap (1,048,576 bytes)" in cut


# -- runs, traces, events ---------------------------------------------------------------------------

def test_runs_with_a_filter_and_a_task_list(stdio, store):
    wh = tw.open(store)
    expected = [r["run_id"] for r in wh.runs({"benchmark": "delegate52"}).arrow().to_pylist()]
    listed = stdio.ok("list_runs", benchmark="delegate52", order_by="run_id", limit=5)
    assert [line.split(" | ")[0].lstrip("| ") for line in listed.splitlines()[2:-2]] == expected[:5]
    assert "| delegate52 |" in listed and "decisionbench" not in listed and "truncated: the first 5 rows" in listed
    page = stdio.ok("list_runs", benchmark="delegate52", order_by="run_id", limit=5, offset=5)
    assert [line.split(" | ")[0].lstrip("| ") for line in page.splitlines()[2:-2]] == expected[5:10]
    assert stdio.call("list_runs", filters={"colour": "red"})[0] is True
    tasks = stdio.ok("list_tasks", run_id=expected[0])
    assert tasks.splitlines()[0].startswith("| run_id | task_id |")
    assert stdio.call("list_tasks", run_id="nope") == (True, "no run 'nope'")


def test_a_trace_as_a_tree_with_payloads_cut_then_one_event_whole(stdio, store):
    wh = tw.open(store)
    run_id, task_id = wh.sql("select run_id, task_id from events where kind = 'delegation' limit 1").fetchall()[0]
    tree = stdio.ok("get_trace", run_id=run_id, task_id=task_id, payload_chars=30)
    lines = tree.splitlines()
    assert lines[0].startswith(f"run {run_id}, task {task_id}: ")
    nested = [line for line in lines[1:] if line.startswith("  #")]
    assert nested, "a delegation's calls sit under it"
    cut = next(line for line in lines if "more characters: get_event(" in line)
    event_id = cut.split("event_id='")[1].split("'")[0]
    whole = json.loads(stdio.ok("get_event", run_id=run_id, event_id=event_id))
    stored = wh.event(run_id, event_id)
    assert whole["event_id"] == event_id and whole["payload"] == json.loads(stored["payload"])
    assert cut.split("payload: ")[1].startswith(json.dumps(whole["payload"], ensure_ascii=False)[:30] + "…")
    assert stdio.call("get_event", run_id=run_id, event_id="nope") == (True, f"no event 'nope' in run {run_id!r}")


def test_compare_is_what_the_warehouse_compares(stdio, store):
    args = {"target": "dcb_tasks.quality", "by": "condition", "a": "blind", "b": "aware-c2", "n_boot": 1000}
    answer = json.loads(stdio.ok("compare", **args))
    target = args.pop("target")
    expected = json_value(tw.open(store).compare(target, **args).to_dict())
    assert answer == expected and answer["n_pairs"] > 0
    error, said = stdio.call("compare", target="dcb_tasks", by="condition", a="blind", b="aware-c2")
    assert error and said.startswith("'dcb_tasks': give VIEW.COLUMN")


# -- labels and tokens --------------------------------------------------------------------------------

def test_over_stdio_the_label_tool_exists_only_with_allow_labels(stdio, store):
    assert "add_label" not in stdio.tools()
    assert stdio.call("add_label", rubric="tone", target_id="t", annotator="ann", label="ok")[0] is True
    labelling = Session(lambda: over_stdio(store, "--allow-labels"))
    try:
        assert "add_label" in labelling.tools()
        said = labelling.ok("add_label", rubric="mcp_tone", target_id="task-001", annotator="ann", label="polite")
        assert said.startswith("label recorded: mcp_tone / task-001 by ann")
        rows = labelling.ok("sql", query="select rater, label from labels where rubric = 'mcp_tone'")
        assert "| ann | polite |" in rows
        error, bad = labelling.call("add_label", rubric="mcp_tone", target_id="task-001", annotator="ann")
        assert error and "\n" not in bad.strip() and "label" in bad
    finally:
        labelling.close()


def test_over_http_the_label_tool_needs_the_ingest_token(http, server, store):
    error, said = http.call("add_label", rubric="mcp_http", target_id="task-002", annotator="bob", label="rude")
    assert error and said == "refused: a valid bearer token is required to ingest"
    with_token = Session(lambda: over_http(server, TOKEN))
    try:
        said = with_token.ok("add_label", rubric="mcp_http", target_id="task-002", annotator="bob", label="rude")
        assert said.startswith("label recorded: mcp_http / task-002 by bob")
    finally:
        with_token.close()
    for _ in range(100):  # the service commits labels a moment after it answers (its label spool)
        rows = post_sql(server, "select rater, label from labels where rubric = 'mcp_http'").json()["rows"]
        if rows:
            break
        time.sleep(0.1)
    assert rows == [{"rater": "bob", "label": "rude"}]


def test_reads_over_http_need_the_token_when_one_is_configured(store, new_service):
    """Without --public-read, /mcp answers 401 before it reads a byte of the body, as POST /sql does
    (the fixture's server, with --public-read, shows the token let through)."""
    client = new_service(store, token=TOKEN)
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    for answer in (client.post("/mcp", json=hello), client.post("/sql", json={"query": "select 1"})):
        assert answer.status_code == 401 and "bearer token is required" in answer.json()["detail"]
        assert answer.headers["www-authenticate"] == "Bearer"
    wrong = client.post("/mcp", json=hello, headers={"Authorization": "Bearer not-the-token"})
    assert wrong.status_code == 401
