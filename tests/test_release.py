"""`tracewh release DIR`: a dataset folder from the store, loaded as its readers load it (Hugging
Face `datasets`, DuckDB, MLCommons' Croissant reader) and read back by `tracewh ingest`.

The demo store (`tracewh demo --tasks 2`) is released whole and in part; small native stores
carry planted secrets and hand-made tampering. Every load runs offline."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anthropic
import duckdb
import httpx2
import openai
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from helpers import plain, store_version, tracewh, write_native, zip_folder

import tracewh as tw
from fake_llm import FakeLLM, anthropic_message, openai_completion, status
from tracewh.schema import COLUMN_NAMES
from tracewh.schema.content import REMOVED, is_content_key

VIEWS = ("runs", "dcb_tasks")
SUBSET_WHERE = "benchmark = 'entcollabbench'"


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("home")
    tracewh("demo", "--tasks", "2", env=os.environ | {"TRACEWH_HOME": str(home)}, check=True)
    return home / "demo" / "warehouse"


@pytest.fixture(scope="module")
def full(demo, tmp_path_factory) -> Path:
    """The whole demo store released, with two views."""
    out = tmp_path_factory.mktemp("releases") / "demo release"
    tw.open(demo).release(out, views=VIEWS, license="cc-by-4.0")
    return out


@pytest.fixture(scope="module")
def reingested(full, tmp_path_factory) -> Path:
    wh = tmp_path_factory.mktemp("again") / "wh"
    tw.open(wh).ingest([full])
    return wh


def offline(tmp: Path) -> dict[str, str]:
    """The environment of a process that loads with `datasets`: no network, caches in `tmp`."""
    return os.environ | {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp / "hf"),
                         "HF_DATASETS_CACHE": str(tmp / "hf" / "datasets")}


def python(code: str, cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def card_blocks(folder: Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", (folder / "README.md").read_text(), re.S)


def front_matter(folder: Path) -> dict[str, Any]:
    text = (folder / "README.md").read_text()
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n", 2)[1])


def same(x: Any, y: Any) -> bool:
    """Equal, floats to the last few bits: a sum's last bits depend on the order DuckDB adds in,
    which follows the files' layout, not their content."""
    if isinstance(x, float) and isinstance(y, float):
        return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12) or (math.isnan(x) and math.isnan(y))
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
        return len(x) == len(y) and all(same(a, b) for a, b in zip(x, y))
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
    return x == y


def answers(wh: tw.Warehouse, view: str, runs: list[str] | None = None) -> list[tuple]:
    where = " where list_contains($1, run_id)" if runs is not None else ""
    return wh.sql(f"select * from {view}{where} order by all", [runs] if runs is not None else None).fetchall()


def event_ids(wh: tw.Warehouse) -> list[str]:
    return [e for e, in wh.sql("select event_id from events_raw order by run_id, seq, event_id").fetchall()]


# ------------------------------------------------------------------------- the folder and its readers
def test_the_folder_card_and_digests(demo, full):
    store = tw.open(demo)
    shards = sorted((full / "events").glob("*.parquet"))
    assert {p.name for p in full.iterdir()} == {"README.md", "croissant.json", "events", "views"}
    assert sorted(p.name for p in (full / "views").iterdir()) == sorted(VIEWS)
    meta = front_matter(full)
    assert meta["license"] == "cc-by-4.0" and "license_name" not in meta
    assert [(c["config_name"], c["data_files"][0]["path"]) for c in meta["configs"]] == [
        ("events", "events/*.parquet"), *((v, f"views/{v}/*.parquet") for v in VIEWS)]
    card = (full / "README.md").read_text()
    events = event_ids(store)
    assert f"store at version {store.version}" in card
    runs = store.sql("select count(distinct run_id) from events_raw").fetchall()[0][0]
    assert f"{len(events)} events of {runs} runs" in card
    # the two digests, recomputed as the card tells a reader to
    listing = "".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  events/{p.name}\n" for p in shards)
    assert f"Content digest: `{hashlib.sha256(listing.encode()).hexdigest()}`" in card
    assert f"Event digest: `{hashlib.sha256(''.join(e + chr(10) for e in events).encode()).hexdigest()}`" in card
    # the column docs come from the schema, not a copy
    assert "| `payload` | string |  | Everything else, as a JSON object (text). |" in card
    assert "The events hold content as it was recorded" in card and "Nothing was found." in card
    # sorted by run and seq, zstd, the event schema's columns and types
    first = pq.ParquetFile(shards[0])
    assert first.schema_arrow.names == list(COLUMN_NAMES)
    assert first.metadata.row_group(0).column(0).compression == "ZSTD"
    keys = duckdb.sql(f"select run_id, seq, event_id from read_parquet({[str(p) for p in shards]})").fetchall()
    assert keys == sorted(keys) and len(keys) == len(events)


def test_the_cards_examples_run_datasets_and_duckdb(demo, full, tmp_path):
    """The card's Python (🤗 datasets, offline) and SQL (DuckDB) examples, run as written in the
    release folder; and `load_dataset` on the folder finds each config from the card's front matter."""
    store = tw.open(demo)
    n = store.sql("select count(*) from events_raw").fetchall()[0][0]
    (code,) = card_blocks(full, "python")
    configs = ("import json, os\nprint(json.dumps({c: load_dataset(os.getcwd(), c, split='train').num_rows for c in "
               f"{['events', *VIEWS]!r}}}))")  # one process: importing datasets takes seconds
    printed, by_config = python(f"{code}\n{configs}", full, offline(tmp_path)).splitlines()
    assert printed.split()[0] == str(n)
    assert json.loads(by_config) == {"events": n, **{v: store.sql(f"select count(*) from {v}").fetchall()[0][0]
                                                     for v in VIEWS}}
    (query,) = card_blocks(full, "sql")
    with duckdb.connect() as con:
        con.execute(f"set file_search_path = '{full}'")
        assert con.sql(query).fetchall() == store.sql(
            "select benchmark, kind, count(*) from events_raw group by all order by all").fetchall()


def test_the_views_are_their_rows_over_the_released_events(demo, full):
    for view in VIEWS:
        released = duckdb.sql(f"select * from read_parquet('{full}/views/{view}/*.parquet')").fetchall()
        assert same(released, answers(tw.open(demo), view))


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")  # mlcroissant's, of its own dependencies
def test_croissant_is_valid_croissant_1_0(demo, full):
    """MLCommons' own reader validates it and reads records through it; the files' hashes hold."""
    import mlcroissant as mlc

    document = json.loads((full / "croissant.json").read_text())
    assert document["conformsTo"] == "http://mlcommons.org/croissant/1.0" and document["@type"] == "sc:Dataset"
    assert document["license"] == "cc-by-4.0"
    files = {d["contentUrl"]: d for d in document["distribution"] if d["@type"] == "cr:FileObject"}
    assert set(files) == {p.relative_to(full).as_posix() for p in full.rglob("*.parquet")}
    for path, entry in files.items():
        assert entry["sha256"] == hashlib.sha256((full / path).read_bytes()).hexdigest()
        assert entry["encodingFormat"] == "application/x-parquet"
    (events,) = [r for r in document["recordSet"] if r["@id"] == "events"]
    types = {f["name"]: f["dataType"] for f in events["field"]}
    assert list(types) == list(COLUMN_NAMES)
    assert (types["seq"], types["ts"], types["cost_usd"], types["payload"]) == ("sc:Integer", "sc:DateTime", "sc:Float", "sc:Text")
    dataset = mlc.Dataset(jsonld=full / "croissant.json")  # raises on any validation error
    first = next(iter(dataset.records(record_set="runs")))
    assert first["runs/run_id"].decode() == answers(tw.open(demo), "runs")[0][0]


# ------------------------------------------------------------------------- back into a store
def test_round_trip_gives_every_views_answers(demo, full, reingested):
    """Release -> ingest into an empty store: the same event ids, and every view answers the same
    (each view reads the events only, and the release holds them all)."""
    store, again = tw.open(demo), tw.open(reingested)
    assert event_ids(again) == event_ids(store)
    differ = [v.name for v in store.views() if not same(answers(store, v.name), answers(again, v.name))]
    assert differ == []


def test_ingesting_a_release_again_adds_nothing(demo, full, reingested, run):
    before = store_version(reingested)
    again = run("ingest", full, "-w", reingested, check=True)
    assert "1 batch already ingested" in plain(again.out + again.err)
    assert store_version(reingested) == before
    into_its_origin = run("ingest", full, "-w", demo, check=True)  # its events are there already: duplicates
    assert re.search(r"0 events added, (\d+) duplicate", plain(into_its_origin.out + into_its_origin.err)).group(1) == str(
        len(event_ids(tw.open(demo))))


# A view with a run_id column whose rows for a run read other runs' events too: each run's
# candidate peers are ranked by their pass rates in the Stage-1 runs.
READS_OTHER_RUNS = {"dcb_candidates"}


def test_a_subset_of_runs(demo, tmp_path, run):
    """--where over `runs` and --run together: exactly those runs, and every view with a run_id
    column answers for them from the release as from the store, but READS_OTHER_RUNS. (Views
    without one aggregate over every run: over a subset they answer for the subset.)"""
    store = tw.open(demo)
    runs = [r for r, in store.sql("select run_id from (select run_id, benchmark, row_number() over (partition by "
                                  "benchmark order by run_id) as n from runs) where n <= 2 order by run_id").fetchall()]
    assert len(runs) == 8  # two of each benchmark
    out = tmp_path / "subset"
    run("release", out, "--where", "benchmark <> 'agentdemo'", *[a for r in runs for a in ("--run", r)],
        "--view", "ecb_tasks", "-w", demo, check=True)
    wanted = [r for r, in store.sql("select run_id from runs where benchmark <> 'agentdemo' and list_contains($1, run_id) "
                                    "order by run_id", [runs]).fetchall()]
    released = duckdb.sql(f"select distinct run_id from read_parquet('{out}/events/*.parquet') order by 1").fetchall()
    assert [r for r, in released] == wanted and len(wanted) == 6
    run("ingest", out, "-w", tmp_path / "wh", check=True)
    again = tw.open(tmp_path / "wh")
    per_run = [v.name for v in store.views() if "run_id" in dict(v.columns)]
    assert len(per_run) > 30
    differ = [v for v in per_run if not same(answers(store, v, wanted), answers(again, v, wanted))]
    assert differ == sorted(READS_OTHER_RUNS)
    assert same(duckdb.sql(f"select * from read_parquet('{out}/views/ecb_tasks/*.parquet') order by all").fetchall(),
                answers(store, "ecb_tasks", wanted))


def test_no_content_drops_content_everywhere_and_still_ingests(demo, tmp_path, run):
    """EntCollabBench runs: their messages, tool calls and results carry text."""
    out = tmp_path / "private"
    run("release", out, "--no-content", "--where", SUBSET_WHERE, "--view", "ecb_tasks", "-w", demo, check=True)
    texts = [t for t, in tw.open(demo).sql("select payload ->> '$.text' from events where kind = 'message' "
                                           "and length(payload ->> '$.text') > 40 limit 20").fetchall()]
    assert texts
    payloads = [p for p, in duckdb.sql(f"select payload from read_parquet('{out}/events/*.parquet')").fetchall()]
    assert not [k for p in payloads if p for k in _keys(orjson.loads(p)) if is_content_key(k)]
    everything = [str(v) for f in out.rglob("*.parquet") for row in pq.read_table(f).to_pylist() for v in row.values()]
    assert len(everything) > 1000 and not [t for t in texts if any(t in v for v in everything)]
    assert "**Content was dropped**" in (out / "README.md").read_text()
    run("ingest", out, "-w", tmp_path / "wh", check=True)
    again = tw.open(tmp_path / "wh")
    ecb = tw.open(demo).sql(f"select event_id from events_raw where run_id in (select run_id from runs where "
                            f"{SUBSET_WHERE}) order by run_id, seq, event_id").fetchall()
    assert [(e,) for e in event_ids(again)] == ecb
    assert again.sql("select count(*) from events where kind = 'message' and payload ->> '$.text' is not null").fetchall() == [(0,)]
    runs = [r for r, in again.sql("select run_id from runs").fetchall()]
    for view in ("runs", "tasks", "ecb_tasks"):  # metrics read no content
        assert same(answers(again, view), answers(tw.open(demo), view, runs)), view


def _keys(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [k for k, v in value.items() for k in (k, *_keys(v))]
    if isinstance(value, list):
        return [k for v in value for k in _keys(v)]
    return []


def test_no_content_holds_what_capture_without_content_stores(tmp_path):
    """One definition of content: a run captured with content and released --no-content holds the
    payloads the same run captured without content stores (capture's privacy switch)."""
    stores = {}
    for capture in (True, False):
        fake = FakeLLM([openai_completion("gpt-5.4", content="Paris", tool_calls=[("web_search", {"q": "Louvre"})]),
                        anthropic_message("claude-sonnet-4-6", "Paris", [("lookup", {"q": "Louvre"})]),
                        status(400, "prompt 'Where is the Louvre?' is too long")])
        spool = tmp_path / f"spool-{capture}"
        with tw.record("r", spool=spool, capture_content=capture) as rec, rec.task("t1"):
            oai = rec.wrap(openai.OpenAI(api_key="test", base_url=fake.openai_url, max_retries=0,
                                         http_client=httpx2.Client(transport=fake.transport())))
            oai.chat.completions.create(model="gpt-5.4", messages=[{"role": "user", "content": "Louvre"}],
                                        user="alice", seed=7)
            with rec.delegate(to="claude-sonnet-4-6", subtask="verify the opening year"):
                rec.wrap(anthropic.Anthropic(api_key="test", base_url=fake.anthropic_url,
                                             http_client=httpx2.Client(transport=fake.transport()))).messages.create(
                    model="claude-sonnet-4-6", max_tokens=10, system="Louvre expert",
                    messages=[{"role": "user", "content": "When?"}])
            with pytest.raises(openai.BadRequestError):
                oai.chat.completions.create(model="gpt-5.4", messages=[{"role": "user", "content": "Where?"}])
            with pytest.raises(KeyError), rec.tool("web_search", {"q": "secret-arg"}) as tool:
                tool.result = "Paris"
                raise KeyError("secret-arg")
        stores[capture] = tw.open(tmp_path / f"wh-{capture}")
        stores[capture].ingest([spool])
    stores[True].release(tmp_path / "out", no_content=True)
    released = duckdb.sql(f"select kind, payload from read_parquet('{tmp_path}/out/events/*.parquet') "
                          "order by seq").fetchall()
    without = stores[False].sql("select kind, payload from events_raw order by seq").fetchall()
    assert [_normal(orjson.loads(p or "{}")) for _, p in released] == [_normal(orjson.loads(p or "{}")) for _, p in without]
    assert [k for k, _ in released] == [k for k, _ in without]
    assert len(released) >= 9 and REMOVED not in str(released)


def _normal(value: Any) -> Any:
    """A payload as two recordings can share it: the fake provider's ids count up across the
    process, and capture writes some content fields as null, others not at all (both: none)."""
    if isinstance(value, dict):
        return {k: "<id>" if k in ("id", "request_id", "response_id") else _normal(v)
                for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


# ------------------------------------------------------------------------- secrets
SECRETS = {
    "openai-key": "sk-proj-" + "A1b2C3d4" * 6,
    "anthropic-key": "sk-ant-api03-" + "Zy9_" * 10,
    "aws-access-key-id": "AKIAIOSFODNN7EXAMPLE",
    "github-token": "ghp_" + "a1B2" * 9,
    "google-api-key": "AIza" + "SyA-" * 8 + "abc",
    "huggingface-token": "hf_" + "k" * 34,
    "slack-token": "xoxb-1234567890-abcdefghij",
    "private-key": "-----BEGIN RSA PRIVATE KEY-----",
    "bearer-token": "Bearer " + "t0k3n" * 6,
    "email": "carol.doe@example.org",
}


@pytest.fixture
def planted(tmp_path) -> Path:
    """A store (in a folder whose name has a space and an accent) with a secret of each shape in
    another place: message text, tool arguments, a result, an error, run attributes, a task id."""
    where = iter(SECRETS.values())
    events = [
        {"run_id": "r1", "benchmark": "custom", "kind": "run_attrs", "seq": 0, "payload": {"owner": next(where)}},
        {"run_id": "r1", "benchmark": "custom", "kind": "llm_call", "seq": 1, "task_id": "t1",
         "payload": {"messages": [{"role": "user", "content": f"use {next(where)} please"}], "content": next(where)}},
        {"run_id": "r1", "benchmark": "custom", "kind": "tool_call", "seq": 2, "task_id": "t1", "tool_name": "http",
         "payload": {"arguments": {"key": next(where), "other": next(where)}}},
        {"run_id": "r1", "benchmark": "custom", "kind": "tool_result", "seq": 3, "task_id": "t1", "tool_name": "http",
         "payload": {"result": f"{next(where)}\n{next(where)}", "error": f"KeyError: {next(where)}"}},
        {"run_id": "r1", "benchmark": "custom", "kind": "message", "seq": 4, "task_id": "t1",
         "payload": {"text": f'header "{next(where)}" sent'}},
        {"run_id": "r1", "benchmark": "custom", "kind": "task_finished", "seq": 5, "task_id": next(where),
         "payload": {"status": "ok"}},
    ]
    folder = tmp_path / "plantés secrets"
    folder.mkdir()
    tw.open(folder / "the store").ingest([write_native(folder / "run one.jsonl", events)])
    return folder / "the store"


def test_the_secret_scan_refuses_and_writes_nothing(planted, run):
    out = planted.parent / "ré lease"
    refused = run("release", out, "-w", planted)
    assert refused.code == 2
    listed = dict(re.findall(r"^  ([a-z0-9-]+) (.*)$", refused.err, re.M))
    assert set(listed) == set(SECRETS)
    assert "run r1" in listed["anthropic-key"] and "llm_call" in listed["anthropic-key"]
    assert "events.payload.messages[0].content" in listed["anthropic-key"] and "events.task_id" in listed["email"]
    assert "run_attrs, events.payload.owner" in listed["openai-key"]
    assert not [v for v in SECRETS.values() if v in refused.err]  # masked, never shown
    assert sorted(p.name for p in planted.parent.iterdir()) == ["run one.jsonl", "the store"]  # no folder, no leftovers


def test_allow_names_values_detectors_and_patterns(planted, run):
    out = planted.parent / "ré lease"
    allow = ["--allow", "email", "--allow", SECRETS["openai-key"], "--allow", r"sk-ant-api03-.*"]
    for name, value in SECRETS.items():
        if name not in ("email", "openai-key", "anthropic-key"):
            allow += ["--allow", value]
    assert run("release", out, *allow[:-2], "-w", planted).code == 2 and not out.exists()  # one value still unnamed
    run("release", out, *allow, "-w", planted, check=True)
    assert f"{len(SECRETS)} values found by the scan were released on purpose" in (out / "README.md").read_text()
    run("ingest", out, "-w", planted.parent / "other store", check=True)
    assert event_ids(tw.open(planted.parent / "other store")) == event_ids(tw.open(planted))


def test_no_content_leaves_only_secrets_outside_content(planted, run):
    refused = run("release", planted.parent / "out", "--no-content", "-w", planted)
    assert sorted(re.findall(r"^  ([a-z0-9-]+) ", refused.err, re.M)) == ["email", "openai-key"]  # the task id, attrs
    assert "(and 1 more cell)" not in refused.err
    # the views are scanned too: `runs` shows the run's attributes (a JSON column)
    with_view = run("release", planted.parent / "out", "--no-content", "--view", "runs", "-w", planted)
    (line,) = [line for line in with_view.err.splitlines() if line.startswith("  openai-key")]
    assert "events.payload.owner (and 1 more cell)" in line and not (planted.parent / "out").exists()


# ------------------------------------------------------------------------- the folder's safety
def test_the_target_folder_is_written_whole_or_not_at_all(demo, full, tmp_path, run):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    for target, flags, says in ((taken, [], "not empty"), (taken, ["--overwrite"], "not a tracewh release"),
                                (demo, ["--overwrite"], "cannot be the store"),
                                (demo.parent, ["--overwrite"], "cannot be the store")):
        refused = run("release", target, *flags, "--run", "nope", "-w", demo)
        assert refused.code == 2 and says in plain(refused.err), refused.err
    assert (taken / "notes.txt").read_text() == "mine"
    copy = tmp_path / "copy"
    shutil.copytree(full, copy)
    runs = tw.open(demo).sql("select min(run_id) from events_raw").fetchall()[0][0]
    assert run("release", copy, "--run", runs, "-w", demo).code == 2
    run("release", copy, "--run", runs, "--overwrite", "-w", demo, check=True)
    assert duckdb.sql(f"select count(distinct run_id) from read_parquet('{copy}/events/*.parquet')").fetchall() == [(1,)]
    assert not (copy / "views").exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    empty = tmp_path / "empty"
    empty.mkdir()
    run("release", empty, "--run", runs, "--shard-rows", "5", "-w", demo, check=True)
    shards = sorted((empty / "events").glob("*.parquet"))
    assert len(shards) > 1 and all(pq.ParquetFile(s).metadata.num_rows <= 5 for s in shards)


@pytest.mark.parametrize("args, says", [
    (["--run", "no-such-run"], "no run 'no-such-run'"),
    (["--where", "benchmark = 'nothing'"], "no run matches"),
    (["--where", "1; drop table x"], ""),
    (["--where", "nope = 1"], 'column "nope" not found'),
    (["--where", "run_id = 1"], "Could not convert string"),
    (["--view", "no_such_view"], "no view named 'no_such_view'"),
])
def test_bad_requests_are_refused_in_one_line(demo, tmp_path, run, args, says):
    refused = run("release", tmp_path / "out", *args, "-w", demo)
    assert refused.code == 2 and says in plain(refused.err) and not (tmp_path / "out").exists()


# ------------------------------------------------------------------------- tampering
def _rewrite(shard: Path, change) -> None:
    table = pq.read_table(shard)
    pq.write_table(change(table).replace_schema_metadata(table.schema.metadata), shard)


def _set(table: pa.Table, name: str, values: pa.Array) -> pa.Table:
    i = table.schema.get_field_index(name)
    return table.set_column(i, pa.field(name, values.type), values)


TAMPERING = {
    "truncated": (lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]), "not a readable Parquet file"),
    "seq as text": (lambda p: _rewrite(p, lambda t: _set(t, "seq", t["seq"].cast(pa.string()))),
                    "field 'seq': column of type string; the event schema's is int64"),
    "run_id dropped": (lambda p: _rewrite(p, lambda t: t.drop_columns(["run_id"])),
                       "field 'run_id': required column is missing"),
    "a column added": (lambda p: _rewrite(p, lambda t: t.append_column("secret", pa.array(["x"] * len(t)))),
                       "field 'secret': unknown column"),
    "not its footer": (lambda p: pq.write_table(pq.read_table(p).replace_schema_metadata({}), p),
                       "not a shard of a tracewh release"),
    "a payload not JSON": (lambda p: _rewrite(p, lambda t: _set(t, "payload", pa.array(["{oops"] * len(t)))),
                           "line 1, field 'payload'"),
    "an unknown kind": (lambda p: _rewrite(p, lambda t: _set(t, "kind", pa.array(["nope"] * len(t)))),
                        "line 1, field 'kind': unknown kind 'nope'"),
}


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    """A release of a three-event store."""
    tmp = tmp_path_factory.mktemp("small")
    events = [{"run_id": "r", "benchmark": "custom", "kind": "llm_call", "seq": i, "payload": {"i": i}} for i in range(3)]
    tw.open(tmp / "wh").ingest([write_native(tmp / "run.jsonl", events)])
    tw.open(tmp / "wh").release(tmp / "release")
    return tmp / "release"


def test_a_zipped_release_reads_back(small, tmp_path, run):
    """A release folder zipped (as a download may come): its shards are copied out to be read."""
    run("ingest", zip_folder(small, tmp_path / "release.zip"), "-w", tmp_path / "wh", check=True)
    assert event_ids(tw.open(tmp_path / "wh")) == event_ids(tw.open(small.parent / "wh"))


def test_a_release_without_an_optional_column_reads_it_as_null(small, tmp_path, run):
    """As one written before a column was added to the schema would be."""
    copy = tmp_path / "release"
    shutil.copytree(small, copy)
    (shard,) = (copy / "events").glob("*.parquet")
    _rewrite(shard, lambda t: t.drop_columns(["subtask", "cost_usd"]))
    run("ingest", copy, "-w", tmp_path / "wh", check=True)
    assert event_ids(tw.open(tmp_path / "wh")) == event_ids(tw.open(small.parent / "wh"))


@pytest.mark.parametrize("tampering", TAMPERING)
def test_a_tampered_release_is_refused_in_one_line_store_unchanged(small, tmp_path, run, tampering):
    copy = tmp_path / "release"
    shutil.copytree(small, copy)
    (shard,) = (copy / "events").glob("*.parquet")
    change, says = TAMPERING[tampering]
    change(shard)
    run("ingest", write_native(tmp_path / "other.jsonl", [{"run_id": "o", "benchmark": "custom", "kind": "score",
                                                            "seq": 0, "score": 1.0}]), "-w", tmp_path / "wh", check=True)
    before = store_version(tmp_path / "wh")
    refused = run("ingest", copy, "-w", tmp_path / "wh")
    assert refused.code == 2, refused.err
    message = plain(refused.err)
    assert message.startswith(f"error: {shard}") and says in message, message
    assert len(refused.err.strip().splitlines()) == 1
    assert store_version(tmp_path / "wh") == before
