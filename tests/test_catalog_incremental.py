"""A new store version's catalog is derived from the newest one already built (queries/catalog.py,
docs/catalog.md): the new files appended to `events_raw`, the run-local building blocks
recomputed for the runs the commit touched, the others recomputed from their inputs when those
changed. Whatever the commits, every view of a catalog made that way has exactly the rows of a
catalog built from scratch.

The property test ingests random sequences of batches through the real `Warehouse.ingest`
(new runs of every benchmark in its real format, more events for old runs, corrections that
supersede events of the same or another run, events sharing another run's trace id, an
OpenTelemetry run's spans in small requests taken in any order (a child before its agent span,
more traces of a long run),
re-ingests that add nothing, `optimize` compactions, people's labels and their corrections,
review-queue items) and after every commit compares every view
of the derived catalog with a from-scratch build, row for row. That is what checks each view's
`materialize by run_id` (or `by run_id`) declaration: a view declared run-local that is not
shows up here as a row that differs. TRACEWH_HEAVY=1 runs more and longer sequences.
"""

from __future__ import annotations

import json
import os
import random
import zipfile
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest
from helpers import llm_call, write_native, write_zip
from otel_spans import genai_agent_spans, make_provider, otlp_requests, write_otlp_proto_file
from test_catalog import forget_views, views_copy  # noqa: F401 (a fixture)

import tracewh as tw
from tracewh.demo.agent_runs import write_demo_runs
from tracewh.demo.decisionbench_runs import write_decisionbench_demo
from tracewh.demo.delegate52_runs import write_delegate52_demo
from tracewh.demo.entcollabbench_runs import write_entcollabbench_demo
from tracewh.queries import catalog, registry
from tracewh.queries.parse import parse
from tracewh.queries.registry import load_views, view_names
from tracewh.warehouse.store import Store

HEAVY = os.environ.get("TRACEWH_HEAVY") == "1"


# -- the inputs: the demo's runs of every benchmark, cut into one small archive per run ------------

def _split_zip(source: Path, out: Path, group_of, shared=()) -> list[Path]:
    """One zip per group of `source`'s members (`group_of(name)`), each with the `shared` members."""
    with zipfile.ZipFile(source) as z:
        members = {name: z.read(name) for name in z.namelist() if not name.endswith("/")}
    groups: dict[str, dict[str, bytes]] = {}
    for name, data in members.items():
        if name not in shared and group_of(name):
            groups.setdefault(group_of(name), {})[name] = data
    out.mkdir(parents=True, exist_ok=True)
    return [write_zip(out / f"{source.stem}-{i}.zip", group | {s: members[s] for s in shared})
            for i, (_, group) in enumerate(sorted(groups.items()))]


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> list[Path]:
    """Small archives, each one or a few runs in a benchmark's real format."""
    root = tmp_path_factory.mktemp("sources")
    agent = write_demo_runs(root / "agent", tasks=2)
    dcb = _split_zip(write_decisionbench_demo(root / "dcb-sweep"), root / "dcb", lambda name: name.split("/")[0])
    d52 = _split_zip(write_delegate52_demo(root / "d52-all"), root / "d52",
                     lambda name: name if name.startswith("logs/") else None, shared=("delegate52.jsonl",))
    ecb = _split_zip(write_entcollabbench_demo(root / "ecb-all")[0], root / "ecb",
                     lambda name: Path(name).stem.split("-", 1)[-1])
    rng = random.Random(0)  # a fixed, varied subset keeps each step small
    return rng.sample(agent, 3) + rng.sample(dcb, 8) + rng.sample(d52, 4) + ecb + otel_requests(root / "otel")


def otel_requests(out: Path) -> list[Path]:
    """One OpenTelemetry run of three traces (tasks) in requests of 4 spans, a file each: taken
    in any order, a trace's spans come in several commits, its agent span before or after the
    spans it names the agent of."""
    provider, memory = make_provider(benchmark="otel", run_id="otel-long-run", seed=3)
    genai_agent_spans(provider, tasks=["t1", "t2", "t3"], t0_ns=1_790_000_000_000_000_000)
    out.mkdir(parents=True)
    return [write_otlp_proto_file(out / f"spans-{i}.binpb", [request])
            for i, request in enumerate(otlp_requests(list(memory.get_finished_spans()), 4))]


# -- comparing a derived catalog with a from-scratch build ------------------------------------------

def differences(derived: Path, scratch: Path) -> dict[str, list[tuple]]:
    """Every view (and events_raw) whose rows differ between the two catalogs, with a few of the
    rows one has and the other lacks (compared as bags, doubles to 9 places: a parallel sum's
    last bits vary from build to build)."""
    con = duckdb.connect()
    con.execute(f"ATTACH '{derived}' AS derived (READ_ONLY)")
    con.execute(f"ATTACH '{scratch}' AS scratch (READ_ONLY)")
    found = {}
    for view in ["events_raw", *view_names()]:
        columns = con.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = 'derived' "
                              "AND table_name = ? ORDER BY column_index", [view]).fetchall()
        select = ", ".join(f"round({c}, 9) AS {c}" if kind in ("DOUBLE", "FLOAT") else c for c, kind in columns)
        for db in ("derived", "scratch"):  # each view computed once per catalog
            con.execute(f"CREATE OR REPLACE TEMP TABLE rows_{db} AS SELECT {select} FROM {db}.{view}")
        one_way = [con.execute(f"FROM rows_{a} EXCEPT ALL FROM rows_{b} LIMIT 2").fetchall()
                   for a, b in (("derived", "scratch"), ("scratch", "derived"))]
        if one_way[0] or one_way[1]:
            found[view] = [("only derived", *one_way[0]), ("only from scratch", *one_way[1])]
    con.close()
    return found


def scratch_build(wh: Path, folder: Path) -> Path:
    """The catalog of the store's latest version, built from scratch (no older catalog at hand)."""
    store = Store(wh)
    path = folder / f"scratch-v{store.version()}.duckdb"
    catalog._build(path, store.files(store.version()))
    return path


# -- the batches a sequence is made of ---------------------------------------------------------------

def events_of_a_run(wh: Path, rng: random.Random, n: int) -> list[dict[str, Any]]:
    """Up to `n` stored events of one run picked at random (one run: `runs` keeps one benchmark per run)."""
    relation = tw.open(wh).sql("SELECT * FROM events ORDER BY run_id, event_id")
    rows = [dict(zip(relation.columns, row)) for row in relation.fetchall()]
    run = rng.choice(rows)["run_id"]
    mine = [e for e in rows if e["run_id"] == run]
    return rng.sample(mine, min(n, len(mine)))


def later(event: dict[str, Any], by: int) -> dict[str, Any]:
    """A copy of a stored event placed `by` later in its run: the step, round trip and interaction
    its payload names too, so that no view meets two events at the same place (a tie that a view
    orders either way, from one build to the next)."""
    payload = json.loads(event["payload"]) if event.get("payload") else {}
    moved = {k: v + by for k, v in payload.items() if k in ("step", "round_trip", "k") and isinstance(v, int)}
    return event | {"seq": event["seq"] + by, "payload": json.dumps(payload | moved)}


def as_native(event: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A stored event written again in the native format, with `changes` (a new event). A copy
    names no model unless told: `runs` takes the mode of a run's models, and a tie has no one answer."""
    out = {k: v for k, v in event.items() if k not in ("event_id", "batch_id", "schema_version", "source", "model")}
    out["payload"] = json.loads(out["payload"]) if out.get("payload") else None
    if isinstance(out.get("ts"), datetime):
        out["ts"] = out["ts"].isoformat()
    return out | changes


def step(wh: Path, work: Path, rng: random.Random, unused: list[Path], used: list[Path], n: int) -> str:
    """One random batch (or maintenance) on the store; what it was."""
    choice = rng.choice(["runs", "runs", "more", "correct", "correct", "trace", "repeat", "optimize", "label",
                         "queue"]) if used else "runs"
    if choice == "runs" and unused:
        batch = [unused.pop(rng.randrange(len(unused))) for _ in range(min(len(unused), rng.randint(1, 2)))]
        tw.open(wh).ingest(batch)
        used += batch
        return f"new runs {[p.name for p in batch]}"
    if choice == "repeat" or (choice == "runs" and not unused):
        tw.open(wh).ingest([rng.choice(used)])
        return "a re-ingest (adds nothing)"
    if choice == "optimize":
        tw.open(wh).optimize()
        if rng.random() < 0.5:  # then a commit before any read, as the service's committer under load
            return "optimize, then " + step(wh, work, rng, unused, used, n)
        return "optimize"
    if choice in ("label", "queue"):
        return judging_step(wh, work, rng, choice, n)
    picked = events_of_a_run(wh, rng, rng.randint(1, 4))
    if choice == "more":  # more events of an old run, as its own harness logged them
        events = [as_native(later(e, 1000), cost_usd=round(rng.random(), 4)) for e in picked]
    elif choice == "correct":  # each corrects a stored event; now and then logged as another run
        fixer = None if rng.random() < 0.7 else f"fixer-{n}"
        events = [as_native(e, supersedes=e["event_id"], score=round(rng.random(), 3), cost_usd=round(rng.random(), 4),
                            seq=e["seq"] + 200_000 + i, run_id=fixer or e["run_id"],
                            model=None if fixer else e["model"])
                  for i, e in enumerate(picked)]
    else:  # a new run whose events carry the trace id of old runs' events
        events = [as_native(e, run_id=f"copy-{n}", seq=i, cost_usd=round(rng.random(), 4))
                  for i, e in enumerate(picked)]
    tw.open(wh).ingest([write_native(work / f"batch-{n}.jsonl", events)], check=False)  # crafted: past the gate
    return f"{choice}: {len(events)} events"


RUBRIC = """\
name: {name}
version: 1
targets: select event_id as target_id, run_id, task_id from events where kind = 'llm_call' order by event_id limit 4
prompt: "{{{{ target_id }}}}"
labels: [good, bad]
judges: [openai:gpt-5-nano]
"""


def judging_step(wh: Path, work: Path, rng: random.Random, choice: str, n: int) -> str:
    """People's labels of stored events (a later one by the same annotator supersedes theirs), or
    a rubric's targets queued for review (again: a new number of reviews)."""
    name = rng.choice(["r1", "r2"])
    if choice == "queue":
        rubric = work / f"rubric-{n}.yaml"
        rubric.write_text(RUBRIC.format(name=name))
        tw.open(wh).queue_add(rubric, reviews=rng.randint(1, 2))
        return f"queue {name}"
    targets = [e["event_id"] for e in events_of_a_run(wh, rng, 3)]
    report = tw.open(wh).label([{"rubric": name, "target_id": t, "annotator": rng.choice(["ann", "bob"]),
                                 "label": rng.choice(["good", "bad"])} for t in targets])
    return f"labels {name}: {report.added} added, {report.superseded} superseding"


def run_sequence(tmp_path: Path, sources: list[Path], seed: int, steps: int) -> None:
    rng, wh, work = random.Random(seed), tmp_path / f"wh-{seed}", tmp_path / f"work-{seed}"
    work.mkdir()
    if seed % 2:  # the first catalog derived from the empty one, as in a service started on a new store
        catalog.ensure_empty_catalog(wh)
    unused, used, done = list(sources), [], []
    for n in range(steps):
        done.append(step(wh, work, rng, unused, used, n))
        tw.open(wh).query("select count(*) from events")  # the new version's catalog, derived from the last one
        derived = catalog.catalog_path(wh, Store(wh).version())
        assert differences(derived, scratch_build(wh, work)) == {}, f"seed {seed}, after: {done}"


@pytest.fixture
def refreshes(monkeypatch) -> list[bool]:
    """Whether each catalog build was a refresh of an older catalog (True) or from scratch."""
    seen: list[bool] = []
    real = catalog._refreshed

    def spy(building: Path, older: Path, files: list[str]) -> bool:
        seen.append(real(building, older, files))
        return seen[-1]

    monkeypatch.setattr(catalog, "_refreshed", spy)
    return seen


def test_a_derived_catalog_has_every_row_of_a_full_build(tmp_path, sources, refreshes):
    """Seed 0's first steps: new runs, corrections, more events of an old run, a new run on old traces."""
    run_sequence(tmp_path, sources, seed=0, steps=4)
    assert refreshes == [True, True, True]  # each catalog after the first derived from the one before


def test_touched_runs_read_from_a_table_when_too_many_to_name(tmp_path, sources, refreshes, monkeypatch):
    """A derivation names the touched runs in its SQL as constants, up to MANY_RUNS of them (the
    first catalog derived from the empty one touches every run): past it, the same rows."""
    monkeypatch.setattr(catalog, "MANY_RUNS", 1)
    run_sequence(tmp_path, sources, seed=1, steps=3)
    assert refreshes == [True, True, True]  # the first from the empty catalog (odd seed)


@pytest.mark.heavy
@pytest.mark.skipif(not HEAVY, reason="TRACEWH_HEAVY=1 runs the long sequences")
@pytest.mark.parametrize("seed", range(1, 11))
def test_long_sequences_of_batches(tmp_path, sources, seed):
    run_sequence(tmp_path, sources, seed, steps=20)


# -- what each kind of commit does to the catalog ---------------------------------------------------

def test_spans_of_a_long_run_refresh_their_traces_only(tmp_path, refreshes, monkeypatch):
    """An OpenTelemetry run committed request by request, children before their agent spans (as
    SDKs export them): each trace-local block (`span_agents`) is recomputed over the events of the
    traces a commit touched, not over the run, and every view matches a full build each time.
    Older files are looked into only for traces the store had: a request of new traces reads none."""
    scoped: list[tuple[int, int]] = []  # (traces, events) in each derivation's trace scope
    looked: list[tuple[int, list[str]]] = []  # (older traces touched, runs whose older files were looked into)
    real, real_older = catalog.Scope._traces, catalog.Scope._older_files
    asked: list[list[str]] = []

    def spy(self) -> None:
        if "tracewh_traces" not in self.created:
            asked.clear()
            real(self)
            scoped.append(self.con.execute("SELECT count(DISTINCT trace_id), count(*) FROM tracewh_traces.events")
                          .fetchone())
            older = self.con.execute("SELECT count(*) FROM (FROM tracewh_traces.touched_pairs "
                                     "EXCEPT FROM tracewh_after.new_pairs)").fetchone()[0]
            looked.append((older, [run for runs in asked for run in runs]))

    monkeypatch.setattr(catalog.Scope, "_traces", spy)
    monkeypatch.setattr(catalog.Scope, "_older_files", lambda self, runs: asked.append(runs) or real_older(self, runs))
    wh = tmp_path / "wh"
    requests = otel_requests(tmp_path / "otel")
    for request in requests:
        tw.open(wh).ingest([request])
        tw.open(wh).query("select count(*) from llm_calls")
        assert differences(catalog.catalog_path(wh, Store(wh).version()), scratch_build(wh, tmp_path)) == {}
    assert refreshes == [True] * (len(requests) - 1)
    # requests of 4 spans: one or two traces each; a request's spans and their traces' earlier ones, no more
    run_events = tw.open(wh).query("select count(*) as n from events").tuples()[0][0]
    assert all(traces <= 2 and events < run_events for traces, events in scoped), (scoped, run_events)
    # the run's older files were read for the traces it had only; both kinds of request came
    assert all(bool(runs) == (older > 0) for older, runs in looked), looked
    assert {older > 0 for older, _ in looked} == {True, False}, looked
    # and the agent of each LLM call, named only by its agent span, which came in a later request than some
    assert tw.open(wh).query("select count(*) as n from llm_calls where agent is null").tuples() == [(0,)]


def score(run: str, seq: int, value: float, **fields: Any) -> dict[str, Any]:
    return {"run_id": run, "benchmark": "custom", "kind": "score", "task_id": "t1", "seq": seq, "score": value,
            "payload": {"metric": "pass"}} | fields


def test_a_commit_refreshes_the_catalog_and_the_first_correction_hides_an_old_run_s_event(tmp_path, refreshes):
    wh = tmp_path / "wh"
    tw.open(wh).ingest([write_native(tmp_path / "a.jsonl", [score("r1", 0, 0.2, event_id="s1"), score("r2", 0, 0.4)])])
    assert tw.open(wh).query("select run_id, score from runs order by run_id").tuples() == [("r1", 0.2), ("r2", 0.4)]
    tw.open(wh).ingest([write_native(tmp_path / "b.jsonl", [score("r3", 0, 1.0, supersedes="s1", event_id="s1-fix")])])
    # r1's only event is hidden by a correction logged under another run: r1 has no row now
    assert tw.open(wh).query("select run_id, score from runs order by run_id").tuples() == [("r2", 0.4), ("r3", 1.0)]
    assert refreshes == [True]  # the second version's catalog came from the first one's
    assert differences(catalog.catalog_path(wh, Store(wh).version()), scratch_build(wh, tmp_path)) == {}


def test_a_compaction_over_commits_the_catalog_never_saw_is_built_from_scratch(tmp_path, refreshes):
    """The newest catalog is of version 0; `optimize` then merges files of later commits too: the
    files that came hold events the older catalog never had, so no row of it is kept."""
    wh = tmp_path / "wh"
    for n in range(3):
        tw.open(wh).ingest([write_native(tmp_path / f"{n}.jsonl", [llm_call(f"r{n}", i) for i in range(3)])])
        if n == 0:
            tw.open(wh).query("select count(*) from runs")
    tw.open(wh).optimize()
    assert tw.open(wh).query("select count(*) as n from llm_calls").tuples() == [(9,)]
    assert refreshes == [False]


def test_a_catalog_opens_in_a_plain_duckdb_client_with_every_view_after_a_refresh(tmp_path, refreshes):
    wh = tmp_path / "wh"
    for n in range(2):
        tw.open(wh).ingest([write_native(tmp_path / f"{n}.jsonl", [llm_call(f"r{n}", i) for i in range(2)])])
        tw.open(wh).query("select count(*) from runs")
    assert refreshes == [True]
    con = duckdb.connect(str(catalog.catalog_path(wh, Store(wh).version())), read_only=True)
    for view in view_names():
        con.execute(f"SELECT * FROM {view} LIMIT 1").fetchall()
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (2,)


def test_a_small_store_s_first_catalog_comes_from_the_empty_catalog_with_every_row(tmp_path, sources, refreshes):
    """The empty catalog (every view, no events; the service builds it as it starts on a store
    without data): the first version's catalog is derived from it instead of creating every view
    again, and has every row a full build has."""
    wh = tmp_path / "wh"
    catalog.ensure_empty_catalog(wh)
    tw.open(wh).ingest([sources[3], sources[-1]])  # DecisionBench and EntCollabBench runs
    tw.open(wh).query("select count(*) from events")
    (empty,) = (wh / catalog.FOLDER).glob(f"{catalog.EMPTY}-*.duckdb")
    assert refreshes == [True]
    assert differences(catalog.catalog_path(wh, Store(wh).version()), scratch_build(wh, tmp_path)) == {}
    assert duckdb.connect(str(empty), read_only=True).execute("SELECT count(*) FROM runs").fetchone() == (0,)


def test_a_store_past_the_empty_start_size_builds_its_first_catalog_from_scratch(tmp_path, monkeypatch, refreshes):
    """Derived from the empty catalog, a first catalog would hold every event in memory at once."""
    wh = tmp_path / "wh"
    catalog.ensure_empty_catalog(wh)
    tw.open(wh).ingest([write_native(tmp_path / "a.jsonl", [llm_call("r1", i) for i in range(3)])])
    monkeypatch.setattr(catalog, "EMPTY_START_BYTES", 10)
    assert tw.open(wh).query("select count(*) as n from llm_calls").tuples() == [(3,)]
    assert refreshes == []


def test_every_materialized_view_declares_how_it_is_refreshed():
    """A reader of a view file sees whether a commit recomputes it per run or whole."""
    declared = {v.name: v.local_by for v in load_views() if v.materialize}
    assert {"runs", "d52_scores", "dcb_tasks", "dcb_step_skills", "dcb_task_skills"} <= \
        {name for name, key in declared.items() if key == "run_id"}
    assert declared["dcb_quality"] is None  # a per-model aggregate over runs: recomputed from dcb_tasks


@pytest.mark.parametrize("query, kinds", [
    ("select * from events where kind = 'score'", {"score"}),
    ("select * from events e where 'score' = e.kind and score > 0", {"score"}),
    ("select * from events_raw where kind in ('judgment', 'score') and kind = 'score'", {"score"}),
    ("select supersedes from events_raw where supersedes is not null", set()),  # corrections only
    ("select * from (select * from events where kind = 'registry') join scores using (run_id)", {"registry"}),
    ("with events as (select 1 as kind) select * from events", set()),  # a CTE, not the events
    ("select * from events", None),
    ("select * from events where kind = 'score' or score > 0", None),
    ("select * from events e join runs r on e.kind = 'score'", None),  # a filter in a join: not read
    ("select * from events a join events b using (event_id) where a.kind = 'score'", None),
    ("select * from events where other.kind = 'score'", None),
    ("select * from events where kind = 'score' and run_id in (select run_id from events)", None),
    ("select * from read_parquet('x.parquet') where kind = 'score'", None),
])
def test_the_kinds_a_query_reads_are_read_from_its_sql(query, kinds):
    """A view's event kinds come from its SQL, not a declaration: a read of `events`/`events_raw`
    counts only where it is the whole FROM of a SELECT whose WHERE requires its kind; anything
    else reads any kind (None), and a newer version's catalog then recomputes the view."""
    assert registry.query_kinds(parse(query)) == (None if kinds is None else frozenset(kinds))


def test_a_view_s_kinds_are_those_of_every_view_it_reads():
    views = {v.name: v for v in load_views()}
    assert registry.kinds_read(views, "d52_rs_at_k") == {"score"}
    assert registry.kinds_read(views, "dcb_runs") == {"run_attrs"}
    assert registry.kinds_read(views, "review_queue") == {"judgment", "registry"}
    assert registry.kinds_read(views, "llm_calls") is None  # its agents: the span tree of every kind
    assert registry.kinds_read(views, "events") is None


def test_a_marker_naming_an_unknown_key_is_refused(tmp_path):
    from tracewh.errors import TracewhError
    from tracewh.queries import registry

    view = tmp_path / "zz_bad.sql"
    view.write_text("-- A view.\n-- tracewh: materialize by model\nCREATE OR REPLACE VIEW zz_bad AS SELECT 1 AS x;\n")
    with pytest.raises(TracewhError, match="zz_bad.sql: expected '-- tracewh: materialize'"):
        registry.parse_view(view)


@pytest.mark.parametrize(("marker", "why"), [
    ("-- tracewh: materialize within runs", "expected '-- tracewh: materialize'"),  # within needs run-local
    ("-- tracewh: materialize by run_id within no_such_view", "names a view it does not read"),
    ("-- tracewh: materialize by run_id within tasks", "not declared run-local"),  # read, but plain
])
def test_a_within_declaration_must_name_a_run_local_view_it_reads(views_copy, marker, why):
    from tracewh.errors import TracewhError
    from tracewh.queries import registry

    view = views_copy / "core" / "zz_within.sql"
    view.write_text(f"-- A view.\n{marker}\nCREATE OR REPLACE VIEW zz_within AS SELECT run_id FROM tasks;\n")
    forget_views()
    with pytest.raises(TracewhError, match=why):
        registry.load_views()


def test_a_commit_of_other_runs_skips_the_blocks_within_dcb_runs(tmp_path, sources, monkeypatch):
    """After a DecisionBench run, an OpenTelemetry commit refreshes no block declared `within
    dcb_runs` or `within ecb_runs` (its runs are none of theirs), and the catalog is still a full build's.
    Those two are blocks of `run_attrs` events, which spans are not: kept as they were, asked nothing.
    Nor is any other block of kinds spans are not (judgments, scores, registries) refreshed."""
    refreshed: list[str] = []
    asked: list[str] = []
    real, real_changed = catalog._refresh_rows, catalog.Scope.changed

    def spy(con, view, scope):
        refreshed.append(view.name)
        return real(con, view, scope)

    monkeypatch.setattr(catalog, "_refresh_rows", spy)
    monkeypatch.setattr(catalog.Scope, "changed",
                        lambda self, view: asked.append(view.name) or real_changed(self, view))
    wh = tmp_path / "wh"
    tw.open(wh).ingest([next(p for p in sources if p.parent.name == "dcb")])
    tw.open(wh).query("select count(*) from dcb_tasks")
    assert "dcb_tasks" not in refreshed  # the first catalog: built from scratch
    tw.open(wh).ingest([p for p in sources if p.parent.name == "otel"][:2])
    tw.open(wh).query("select count(*) from dcb_tasks")
    within = {v.name for v in load_views() if v.within}
    assert {"dcb_tasks", "dcb_step_skills", "ecb_tasks"} <= within
    assert refreshed and not within & set(refreshed)  # runs, ... were; none of these
    kept = {"dcb_runs", "ecb_runs", "run_attributes", "judgments", "d52_scores", "dcb_pool", "review_queue_items"}
    assert not kept & set(refreshed) and not kept & set(asked), (refreshed, asked)
    assert differences(catalog.catalog_path(wh, Store(wh).version()), scratch_build(wh, tmp_path)) == {}


def test_a_false_run_local_declaration_is_caught(tmp_path, sources, views_copy):
    """The comparison the property test makes can fail: declare dcb_candidates run-local (it
    is not: a peer's Stage-1 pass rate pools every run of that model) and a Stage-1 run
    committed after a Stage-2 run leaves the Stage-2 run's candidates stale in the derived catalog."""
    marker = views_copy / "decisionbench" / "dcb_candidates.sql"
    marker.write_text(marker.read_text().replace("-- tracewh: materialize\n", "-- tracewh: materialize by run_id\n"))
    forget_views()

    def run_of(split: str) -> Path:
        return next(p for p in sources if any(f"-gaia-{split}-" in name for name in zipfile.ZipFile(p).namelist()))

    first, second = run_of("stage2"), run_of("stage1")
    wh = tmp_path / "wh"
    tw.open(wh).ingest([first])
    tw.open(wh).query("select count(*) from dcb_candidates")
    tw.open(wh).ingest([second])
    tw.open(wh).query("select count(*) from dcb_candidates")
    assert "dcb_candidates" in differences(catalog.catalog_path(wh, Store(wh).version()), scratch_build(wh, tmp_path))


@pytest.mark.parametrize(("waiting", "derived"), [(False, [True, True, True]), (True, [True, True])])
def test_the_service_s_compaction_keeps_the_catalog_derived_across_commits(tmp_path, sources, refreshes, waiting,
                                                                            derived):
    """The service's compactor (service/compaction.py) runs after a commit whose catalog a committer
    deferred, and more commits follow: it builds the catalog of the version it compacts first, so
    every later catalog is still derived (one derived from an older catalog could not keep the
    rows: 7-9 s full builds at scale 1 under live load). Its own version's catalog it builds at
    once, or, while requests wait (`later`), leaves to the next commit's derivation."""
    from tracewh.service.compaction import Compactor

    wh = tmp_path / "wh"
    for source in sources[:3]:
        tw.open(wh).ingest([source])
        tw.open(wh).query("select count(*) from events")
    tw.open(wh).ingest([sources[3]])  # its catalog deferred: nobody has read this version
    refreshes.clear()
    Compactor(files=0, interval_s=0).compact_if_due(tw.open(wh), later=lambda: waiting)
    assert catalog.catalog_path(wh, Store(wh).version()).exists() is not waiting
    tw.open(wh).ingest([sources[4]])
    tw.open(wh).query("select count(*) from events")
    # the deferred version, the compaction's, the commit after; or the last two in one
    assert refreshes == derived
    (work := tmp_path / "work").mkdir()
    assert differences(catalog.catalog_path(wh, Store(wh).version()), scratch_build(wh, work)) == {}


@pytest.mark.parametrize("commit_before_a_read", [False, True])
def test_a_compaction_keeps_every_computed_row(tmp_path, sources, refreshes, commit_before_a_read):
    """`optimize` merges small files: the next version's catalog is the older one with the new file
    list (no full build), and every view still has the rows of a full build. With a commit after
    the compaction and before any read, one derivation from the catalog before the compaction
    tells the files the compaction wrote (event ids of the files that went only) from the commit's."""
    wh, work = tmp_path / "wh", tmp_path / "work"
    work.mkdir()
    for source in sources[:4]:
        tw.open(wh).ingest([source])
        tw.open(wh).query("select count(*) from events")
    refreshes.clear()
    compacted = tw.open(wh).optimize()
    assert compacted["files_after"] < compacted["files_before"]
    if commit_before_a_read:
        tw.open(wh).ingest([sources[4]])
    tw.open(wh).query("select count(*) from events")
    assert refreshes == [True]
    assert differences(catalog.catalog_path(wh, Store(wh).version()), scratch_build(wh, work)) == {}
