"""The HTTP service: endpoints through TestClient, security cases, and a real uvicorn process on 127.0.0.1."""

from __future__ import annotations

import io
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient
from helpers import llm_call, native_lines, serving, store_version, tracewh, write_zip

from tracewh.demo.agent_runs import write_demo_runs
from tracewh.service.app import create_app
from tracewh.service.config import ServiceConfig

TOKEN = "test-token-from-the-environment"


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("service")
    tracewh("ingest", *write_demo_runs(tmp / "runs", tasks=3), "-w", tmp / "wh", check=True)
    return tmp / "wh"


@pytest.fixture
def client(wh) -> TestClient:
    return TestClient(create_app(ServiceConfig(wh, token=TOKEN, row_cap=50, max_upload_bytes=4096)), base_url="http://127.0.0.1")


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

    def upload(name: str, data: bytes, token: str | None = TOKEN):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return client.post("/ingest", files={"file": (name, data)}, headers=headers)

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


def test_ingest_is_off_without_a_configured_token(wh):
    client = TestClient(create_app(ServiceConfig(wh)), base_url="http://127.0.0.1")
    assert client.post("/ingest", files={"file": ("a.zip", b"x")}).status_code == 403


def test_a_real_server_on_loopback_ingests_and_answers(tmp_path):
    wh = tmp_path / "wh"
    with serving(wh, token=TOKEN) as base:
        archive = write_zip(tmp_path / "run.zip", {"e.jsonl": native_lines([llm_call("live", i) for i in range(4)])})
        response = httpx.post(f"{base}/ingest", files={"file": ("run.zip", archive.read_bytes())},
                              headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
        assert response.status_code == 200 and response.json()["added"] == 4
        answer = httpx.post(f"{base}/sql", json={"query": "select run_id, n_llm_calls from runs"}, timeout=30).json()
        assert answer["rows"] == [{"run_id": "live", "n_llm_calls": 4}]
