"""The HTTP service: endpoints through TestClient, security cases, and a real uvicorn process on 127.0.0.1."""

from __future__ import annotations

import functools
import io
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient
from helpers import free_port, llm_call, native_lines, serving, store_version, tracewh, write_zip

from tracewh import open as tracewh_open

from tracewh.demo.agent_runs import write_demo_runs
from tracewh.service.app import create_app
from tracewh.service.config import ServiceConfig

TOKEN = "test-token-from-the-environment"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("service")
    tracewh("ingest", *write_demo_runs(tmp / "runs", tasks=3), "-w", tmp / "wh", check=True)
    return tmp / "wh"


@pytest.fixture
def client(services) -> TestClient:
    """A JSON client of a service with a token: it sends the token with every request, as it must."""
    return services(headers=BEARER, token=TOKEN, row_cap=50, max_upload_bytes=4096)


@pytest.fixture
def services(wh, new_service) -> Callable[..., TestClient]:
    """Services over `wh` (`new_service`'s, bound to the store): their query workers stop after the test."""
    return functools.partial(new_service, wh)


def test_health_views_and_openapi(client, wh):
    assert client.get("/health").json()["store_version"] == store_version(wh)
    names = [v["name"] for v in client.get("/views").json()]
    assert "llm_calls" in names and "dcb_fidelity" in names
    assert "/runs/{run_id}/tasks/{task_id}/trace" in client.get("/openapi.json").json()["paths"]


def test_view_rows_with_filters_pagination_and_formats(client):
    rows = client.get("/views/llm_calls", params={"model": "gpt-5.4", "agent": "orchestrator", "limit": 5}).json()
    assert len(rows) == 5 and {r["model"] for r in rows} == {"gpt-5.4"}
    page2 = client.get("/views/llm_calls", params={"model": "gpt-5.4", "agent": "orchestrator", "limit": 5, "offset": 5}).json()
    assert {r["event_id"] for r in rows}.isdisjoint(r["event_id"] for r in page2)
    csv = client.get("/views/runs", params={"format": "csv"}).text
    assert csv.splitlines()[0].startswith("run_id,benchmark,model")
    table = pq.read_table(io.BytesIO(client.get("/views/runs", params={"format": "parquet"}).content))
    assert table.num_rows == 6
    assert client.get("/views/nope").status_code == 404
    assert client.get("/views/runs", params={"colour": "red"}).status_code == 400


def test_filter_values_are_bound_never_spliced(client):
    injected = client.get("/views/runs", params={"model": "x' or '1'='1"})
    assert injected.status_code == 200 and injected.json() == []
    dropped = client.get("/views/runs", params={"model": "x'; drop view runs; --"})
    assert dropped.status_code == 200 and dropped.json() == []
    assert len(client.get("/views/runs").json()) == 6


def test_sql_is_read_only_capped_and_sandboxed(client):
    result = client.post("/sql", json={"query": "select model, count(*) as n from llm_calls group by 1 order by 1"}).json()
    assert result["columns"] == ["model", "n"] and len(result["rows"]) == 3 and not result["truncated"]
    assert client.post("/sql", json={"query": "select * from events"}).json()["truncated"] is True  # 50-row cap
    pg = client.post("/sql", json={"query": "SELECT COUNT(*)::INT AS n FROM runs", "dialect": "postgres"}).json()
    assert pg["rows"] == [{"n": 6}]
    for bad, status in [("select * from read_csv('/etc/passwd')", 400), ("copy events to '/tmp/x.csv'", 400),
                        ("select * from '/etc/passwd'", 400), ("delete from events", 400),
                        ("select * from nowhere", 400), ("select * from read_text('/etc/hostname')", 400)]:
        response = client.post("/sql", json={"query": bad})
        assert response.status_code == status, (bad, response.text)


def test_runs_and_a_nested_trace(client):
    runs = client.get("/runs").json()
    assert len(runs) == 6
    run_id = runs[0]["run_id"]
    assert client.get(f"/runs/{run_id}").json()["n_tasks"] == 3
    assert client.get("/runs/nope").status_code == 404
    spans = client.get(f"/runs/{run_id}/tasks/task-001/trace").json()["spans"]
    task = next(s for s in spans if s["kind"] == "task_started")
    kinds = [c["kind"] for c in task["children"]]
    assert "llm_call" in kinds and "score" in kinds
    calls_with_tools = [c for c in task["children"] if c["kind"] == "llm_call" and c["children"]]
    assert all(g["kind"] == "tool_call" for c in calls_with_tools for g in c["children"])


def test_ingest_needs_the_token_and_refuses_bad_uploads(client, wh, tmp_path):
    archive = write_zip(tmp_path / "new.zip", {"e.jsonl": native_lines([llm_call("uploaded", 1, prompt_tokens=5)])})
    before = store_version(wh)

    anonymous = TestClient(client.app, base_url="http://127.0.0.1")  # sends only the token given below

    def upload(name: str, data: bytes, token: str | None = TOKEN):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return anonymous.post("/ingest", files={"file": (name, data)}, headers=headers)

    assert upload("new.zip", archive.read_bytes(), token=None).status_code == 401
    assert upload("new.zip", archive.read_bytes(), token="wrong").status_code == 401
    assert upload("../../etc/cron.d/x.zip", archive.read_bytes()).status_code == 400
    assert upload("..zip", archive.read_bytes()).status_code == 400
    assert upload("big.jsonl", b"x" * 5000).status_code == 413
    assert upload("bad.jsonl", b"{not json\n").status_code == 422
    assert store_version(wh) == before
    ok = upload("new.zip", archive.read_bytes())
    assert ok.status_code == 200 and ok.json()["added"] == 1 and ok.json()["version"] == before + 1
    assert upload("new.zip", archive.read_bytes()).json()["already_ingested"] is True


def test_ingest_is_off_without_a_configured_token(services):
    client = services()
    assert client.post("/ingest", files={"file": ("a.zip", b"x")}).status_code == 403


def test_a_real_server_on_loopback_ingests_and_answers(tmp_path):
    wh = tmp_path / "wh"
    with serving(wh, token=TOKEN) as base:
        archive = write_zip(tmp_path / "run.zip", {"e.jsonl": native_lines([llm_call("live", i) for i in range(4)])})
        response = httpx.post(f"{base}/ingest", files={"file": ("run.zip", archive.read_bytes())},
                              headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
        assert response.status_code == 200 and response.json()["added"] == 4
        query = {"query": "select run_id, n_llm_calls from runs"}
        assert httpx.post(f"{base}/sql", json=query, timeout=30).status_code == 401  # reads need the token too
        answer = httpx.post(f"{base}/sql", json=query, headers=BEARER, timeout=30).json()
        assert answer["rows"] == [{"run_id": "live", "n_llm_calls": 4}]
    with serving(wh, "--public-read", token=TOKEN) as base:  # reads opened; ingest still needs the token
        assert httpx.post(f"{base}/sql", json=query, timeout=30).json()["rows"] == answer["rows"]
        assert httpx.post(f"{base}/ingest", files={"file": ("run.zip", archive.read_bytes())}).status_code == 401


# -- the token rule: with a token, every read needs it; --public-read opens reads ----------------

READS = [("GET", "/views"), ("GET", "/views/runs"), ("GET", "/views/runs?format=csv"), ("GET", "/runs"),
         ("GET", "/runs/{run}"), ("GET", "/runs/{run}/tasks/task-001/trace"), ("POST", "/sql"),
         ("GET", "/"), ("GET", "/ui/run?run={run}"), ("GET", "/ui/trace?run={run}&task=task-001"), ("GET", "/ui/views"),
         ("GET", "/ui/views/runs"), ("GET", "/ui/views/runs/download?format=csv"), ("GET", "/ui/figures"),
         ("GET", "/ui/sql"), ("POST", "/ui/sql"), ("POST", "/ui/sql/download"), ("GET", "/ui/store")]


def _read(client: TestClient, method: str, path: str, run: str, headers: dict | None = None):
    path = path.format(run=run)
    if method == "GET":
        return client.get(path, headers=headers)
    if path == "/sql":
        return client.post(path, json={"query": "select count(*) as n from runs"}, headers=headers)
    return client.post(path, data={"q": "select count(*) as n from runs", "format": "csv"}, headers=headers)


@pytest.mark.parametrize(("method", "path"), READS)
def test_with_a_token_every_read_needs_it(wh, services, method, path):
    run = tracewh_open(wh).sql("select min(run_id) from runs").fetchall()[0][0]
    service = services(token=TOKEN)
    refused = _read(service, method, path, run)
    web_page = path == "/" or path.startswith("/ui/")
    # JSON clients get 401; the page sends a browser to sign in (a GET) or says to sign in first (a POST)
    assert refused.status_code == (303 if web_page and method == "GET" else 401), refused.text
    assert "runs" not in refused.text or web_page
    assert _read(service, method, path, run, headers=BEARER).status_code == 200
    assert _read(service, method, path, run, headers={"Authorization": "Bearer wrong"}).status_code in (303, 401)
    assert service.get("/health").status_code == 200  # always open: a load balancer's probe


@pytest.mark.parametrize(("method", "path"), READS)
def test_public_read_and_no_token_leave_reads_open(wh, services, method, path):
    run = tracewh_open(wh).sql("select min(run_id) from runs").fetchall()[0][0]
    public, open_ = services(token=TOKEN, public_read=True), services()
    assert _read(public, method, path, run).status_code == 200
    assert _read(open_, method, path, run).status_code == 200
    assert public.post("/ingest", files={"file": ("a.zip", b"x")}).status_code == 401  # writes still need it
    assert open_.post("/ingest", files={"file": ("a.zip", b"x")}).status_code == 403  # no token: ingest is off


def test_the_serve_command_takes_public_read():
    from typer.testing import CliRunner

    from tracewh.cli.app import app

    assert "--public-read" in CliRunner().invoke(app, ["serve", "--help"], terminal_width=200).output


# -- POST /sql's body: a size limit and an idle timeout ---------------------------------------------

def test_a_sql_body_over_the_limit_is_refused_413_and_only_json_is_read(services):
    service = services(max_sql_body_bytes=1000)
    query = "select 1 as one -- " + "x" * 2000
    answer = service.post("/sql", json={"query": query})
    assert answer.status_code == 413 and "1000-byte limit" in answer.json()["detail"]
    assert service.post("/sql", json={"query": "select 1 as one"}).json()["rows"] == [{"one": 1}]
    text = service.post("/sql", content=b'{"query": "select 1"}', headers={"content-type": "text/plain"})
    assert text.status_code == 422  # a cross-site form cannot send JSON; FastAPI refused it too
    assert service.post("/sql", content=b'{"query": ', headers={"content-type": "application/json"}).status_code == 422


def test_a_sql_body_trickled_a_byte_at_a_time_is_dropped(wh):
    """Headers, then a body that never finishes: the connection is answered 408 and closed within the
    service's body_idle_seconds (set to 1 s here), whether the client pauses or trickles."""
    with _uvicorn(create_app(ServiceConfig(wh, body_idle_seconds=1.0))) as port:
        for pause in (0.2, 5.0):  # trickling every 0.2 s (never idle for 1 s), then stalling
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(b"POST /sql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          b"Content-Length: 1000\r\n\r\n{")
                started, answer = time.monotonic(), b""
                s.settimeout(pause)
                while time.monotonic() - started < 10 and not answer.endswith(b"}"):
                    try:
                        chunk = s.recv(4096)
                    except TimeoutError:
                        # trickle until just before the 1 s deadline, then only listen: a byte that
                        # crosses the server's close makes its kernel reset the connection, and the
                        # reset can discard the 408 before this end reads it (seen on a loaded machine)
                        if time.monotonic() - started < 0.8:
                            s.sendall(b" ")
                        continue
                    if not chunk:
                        break
                    answer += chunk
                assert answer.startswith(b"HTTP/1.1 408"), answer
                assert time.monotonic() - started < 6  # 1 s idle limit, on a busy machine


@contextmanager
def _uvicorn(app) -> Iterator[int]:
    """The app on a real uvicorn server in this process, on a free loopback port."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(100):
        if server.started:
            break
        time.sleep(0.05)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.mark.parametrize(("headers", "status"), [
    ({"Sec-Fetch-Site": "same-origin"}, 200), ({"Sec-Fetch-Site": "none"}, 200), ({}, 200),  # no browser: no other site
    ({"Origin": "http://127.0.0.1"}, 200), ({"Sec-Fetch-Site": "cross-site"}, 403),
    ({"Sec-Fetch-Site": "same-site"}, 403),  # another port of this host is another origin
    ({"Origin": "http://evil.example"}, 403), ({"Origin": "null"}, 403)])
def test_the_page_runs_a_query_only_for_its_own_origin(services, headers, status):
    service = services()
    for path in ("/ui/sql", "/ui/sql/download"):
        answer = service.post(path, data={"q": "select 42 as answer", "format": "csv"}, headers=headers)
        assert answer.status_code == status and ("42" in answer.text) == (status == 200), (path, answer.text[:200])
    assert "42</td>" not in service.get("/ui/sql", params={"q": "select 42 as answer"}).text  # a GET only fills the editor
