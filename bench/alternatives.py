"""The same headline numbers computed the ways labs compute them today, for comparison with tracewh's views.

For three headline views, one per benchmark (d52_rs_at_k, dcb_quality, ecb_table1):
  duckdb_raw   the metric as DuckDB SQL straight over the raw JSONL files (no store)
  pandas_json  a pandas + json script over the raw files (how paper pipelines do it)
  sqlite       the metric as SQL over the events, held in SQLite (a Phoenix/datasette-style store)
Each returns rows comparable with the view's; the benchmark checks they agree before timing them.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow.dataset as ds

Rows = list[tuple[Any, ...]]

# ---------------------------------------------------------------- DELEGATE-52 RS@k
D52_VIEW = "select model, mode, distractors, k, round(rs, 6) from d52_rs_at_k order by all"

D52_DUCKDB = """
select regexp_replace(model_name, '^agentic-', '') as model,
       case when starts_with(model_name, 'agentic-') then 'agentic' else 'direct' end as mode,
       coalesce(distractor_included, false) as distractors, 2 * round_trip_num as k,
       round(100 * avg(coalesce(evaluation.score, 0)), 6) as rs
from read_json('{root}/logs/relay*/*.jsonl', format = 'newline_delimited', columns = {{
    model_name: 'VARCHAR', distractor_included: 'BOOLEAN', round_trip_num: 'INTEGER',
    round_trip_direction: 'VARCHAR', evaluation: 'STRUCT(score DOUBLE)'}})
where round_trip_direction = 'backward'
group by all order by all
"""

D52_SQLITE = """
select model, json_extract(payload, '$.mode'), json_extract(payload, '$.distractors') = 1,
       json_extract(payload, '$.k'), round(100 * avg(score), 6)
from events where benchmark = 'delegate52' and kind = 'score'
group by 1, 2, 3, 4 order by 1, 2, 3, 4
"""


def d52_pandas(root: Path) -> Rows:
    rows = []
    for path in sorted(root.glob("logs/relay*/*.jsonl")):
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if r["round_trip_direction"] == "backward":
                    name = r["model_name"]
                    rows.append((name.removeprefix("agentic-"), "agentic" if name.startswith("agentic-") else "direct",
                                 bool(r.get("distractor_included")), 2 * r["round_trip_num"],
                                 (r.get("evaluation") or {}).get("score") or 0.0))
    frame = pd.DataFrame(rows, columns=["model", "mode", "distractors", "k", "score"])
    out = frame.groupby(["model", "mode", "distractors", "k"])["score"].mean().mul(100).round(6).reset_index()
    return [tuple(r) for r in out.itertuples(index=False)]


# ---------------------------------------------------------------- DecisionBench quality
DCB_VIEW = "select model, suite, condition, n_tasks, round(mean_q, 6), round(mean_cost, 6) from dcb_quality order by all"

DCB_DUCKDB = """
with manifests as (
    select regexp_extract(filename, '(.*)/manifest.json$', 1) as run, orchestrator as model, suite, split, condition
    from read_json('{root}/*/manifest.json', filename = true)
),
records as (
    select regexp_extract(filename, '(.*)/records.jsonl$', 1) as run, task_id, quality
    from read_json('{root}/*/records.jsonl', filename = true, format = 'newline_delimited',
                   columns = {{task_id: 'VARCHAR', quality: 'DOUBLE'}})
),
costs as (
    select regexp_extract(filename, '(.*)/traces/.*$', 1) as run,
           regexp_extract(filename, '/traces/(.*)\\.jsonl$', 1) as task_file, sum(cost_usd) as cost
    from read_json('{root}/*/traces/**/*.jsonl', filename = true, format = 'newline_delimited',
                   columns = {{type: 'VARCHAR', cost_usd: 'DOUBLE'}})
    where type in ('completion', 'peer_completion')
    group by all
)
select m.model, m.suite, m.condition, count(*) as n_tasks, round(avg(r.quality), 6), round(avg(c.cost), 6)
from records r join manifests m using (run) left join costs c on c.run = r.run and c.task_file = r.task_id
where m.split <> 'stage1'
group by all order by all
"""

DCB_SQLITE = """
with runs as (
    select run_id, json_extract(payload, '$.model') as model, json_extract(payload, '$.suite') as suite,
           json_extract(payload, '$.split') as split, json_extract(payload, '$.condition') as condition
    from events where benchmark = 'decisionbench' and kind = 'run_attrs'
),
tasks as (
    select run_id, trace_id, max(case when kind = 'score' then score end) as quality,
           sum(case when kind = 'llm_call' then cost_usd end) as cost
    from events where benchmark = 'decisionbench' and trace_id is not null
    group by run_id, trace_id
)
select r.model, r.suite, r.condition, count(*), round(avg(t.quality), 6), round(avg(t.cost), 6)
from tasks t join runs r using (run_id) where r.split <> 'stage1'
group by 1, 2, 3 order by 1, 2, 3
"""


def dcb_pandas(root: Path) -> Rows:
    rows = []
    for manifest_path in sorted(root.glob("*/manifest.json")):
        run = manifest_path.parent
        m = json.loads(manifest_path.read_text())
        if m["split"] == "stage1":
            continue
        with open(run / "records.jsonl") as f:
            for line in f:
                r = json.loads(line)
                cost = 0.0
                with open(run / "traces" / f"{r['task_id']}.jsonl") as t:
                    for trace_line in t:
                        step = json.loads(trace_line)
                        if step["type"] in ("completion", "peer_completion"):
                            cost += step.get("cost_usd") or 0.0
                rows.append((m["orchestrator"], m["suite"], m["condition"], r["quality"], cost))
    frame = pd.DataFrame(rows, columns=["model", "suite", "condition", "quality", "cost"])
    out = frame.groupby(["model", "suite", "condition"]).agg(n=("quality", "size"), q=("quality", "mean"), c=("cost", "mean"))
    return [(a, b, c, int(n), round(q, 6), round(cost, 6)) for (a, b, c), n, q, cost in
            zip(out.index, out["n"], out["q"], out["c"])]


# ---------------------------------------------------------------- EntCollabBench Table 1
ECB_VIEW = """select model, round(workflow_task, 6), round(workflow_multi_subtask, 6), round(workflow_multi_task, 6),
                     round(approval_task, 6), round(approval_multi_subtask, 6), round(approval_multi_task, 6), round(avg, 6)
              from ecb_table1 order by model"""

ECB_DUCKDB = """
with rows as (
    select regexp_extract(filename, '.*/([^/]+)/result-[^/]+$', 1) as model,
           regexp_extract(filename, 'result-([^/]+)\\.jsonl$', 1) as task_set, task_id, "timestamp" as ts, task_passed,
           judge.summary.subtask_count as n_sub, judge.summary.subtask_pass_count as n_pass
    from read_json('{root}/*/result-*.jsonl', filename = true, format = 'newline_delimited', columns = {{
        "timestamp": 'VARCHAR', task_id: 'VARCHAR', task_passed: 'INTEGER',
        judge: 'STRUCT(summary STRUCT(subtask_count INTEGER, subtask_pass_count INTEGER))'}})
    qualify row_number() over (partition by filename, task_id order by "timestamp" desc) = 1
),
tagged as (
    select *, case when task_set like 'approval%' then 'approval' else 'workflow' end as subset,
           task_set like '%multi%' as multi from rows
)
select model,
       round(100 * avg(task_passed) filter (where subset = 'workflow' and not multi), 6),
       round(100 * sum(n_pass) filter (where subset = 'workflow' and multi) / sum(n_sub) filter (where subset = 'workflow' and multi), 6),
       round(100 * avg(task_passed) filter (where subset = 'workflow' and multi), 6),
       round(100 * avg(task_passed) filter (where subset = 'approval' and not multi), 6),
       round(100 * sum(n_pass) filter (where subset = 'approval' and multi) / sum(n_sub) filter (where subset = 'approval' and multi), 6),
       round(100 * avg(task_passed) filter (where subset = 'approval' and multi), 6),
       round(100 * avg(task_passed), 6)
from tagged group by model order by model
"""

ECB_SQLITE = """
with latest as (
    select run_id, task_id, payload,
           row_number() over (partition by run_id, task_id order by json_extract(payload, '$.result_timestamp') desc) as rn
    from events where benchmark = 'entcollabbench' and kind = 'task_finished' and json_extract(payload, '$.level') = 'task'
),
tasks as (
    select l.run_id, l.task_id, m.model, json_extract(l.payload, '$.subset') as subset,
           json_extract(l.payload, '$.multi') = 1 as multi, json_extract(l.payload, '$.passed') = 1 as passed,
           json_extract(l.payload, '$.n_subtasks') as n_sub, json_extract(l.payload, '$.subtask_pass_count') as n_pass
    from latest l join (select run_id, max(json_extract(payload, '$.model')) as model from events
                        where benchmark = 'entcollabbench' and kind = 'run_attrs' group by run_id) m using (run_id)
    where rn = 1
)
select model,
       round(100.0 * avg(case when subset = 'workflow' and not multi then passed end), 6),
       round(100.0 * sum(case when subset = 'workflow' and multi then n_pass end) / sum(case when subset = 'workflow' and multi then n_sub end), 6),
       round(100.0 * avg(case when subset = 'workflow' and multi then passed end), 6),
       round(100.0 * avg(case when subset = 'approval' and not multi then passed end), 6),
       round(100.0 * sum(case when subset = 'approval' and multi then n_pass end) / sum(case when subset = 'approval' and multi then n_sub end), 6),
       round(100.0 * avg(case when subset = 'approval' and multi then passed end), 6),
       round(100.0 * avg(passed), 6)
from tasks group by model order by model
"""


def ecb_pandas(root: Path) -> Rows:
    rows = []
    for path in sorted(root.glob("*/result-*.jsonl")):
        task_set = path.name.removeprefix("result-").removesuffix(".jsonl")
        latest: dict[str, dict[str, Any]] = {}
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if r["task_id"] not in latest or r["timestamp"] >= latest[r["task_id"]]["timestamp"]:
                    latest[r["task_id"]] = r
        for r in latest.values():
            summary = (r.get("judge") or {}).get("summary") or {}
            rows.append((path.parent.name, "approval" if task_set.startswith("approval") else "workflow",
                         "multi" in task_set, r["task_passed"], summary.get("subtask_count"), summary.get("subtask_pass_count")))
    f = pd.DataFrame(rows, columns=["model", "subset", "multi", "passed", "n_sub", "n_pass"])
    out = []
    for model, g in f.groupby("model"):
        cells = []
        for subset in ("workflow", "approval"):
            single, multi = g[(g.subset == subset) & ~g.multi], g[(g.subset == subset) & g.multi]
            cells += [100 * single.passed.mean(), 100 * multi.n_pass.sum() / multi.n_sub.sum(), 100 * multi.passed.mean()]
        out.append((model, *(round(c, 6) for c in cells), round(100 * g.passed.mean(), 6)))
    return out


# ---------------------------------------------------------------- the registry the benchmark runs
METRICS: dict[str, dict[str, Any]] = {
    "d52_rs_at_k": {"benchmark": "delegate52", "view": D52_VIEW, "duckdb_raw": D52_DUCKDB, "pandas_json": d52_pandas,
                    "sqlite": D52_SQLITE},
    "dcb_quality": {"benchmark": "decisionbench", "view": DCB_VIEW, "duckdb_raw": DCB_DUCKDB, "pandas_json": dcb_pandas,
                    "sqlite": DCB_SQLITE},
    "ecb_table1": {"benchmark": "entcollabbench", "view": ECB_VIEW, "duckdb_raw": ECB_DUCKDB, "pandas_json": ecb_pandas,
                   "sqlite": ECB_SQLITE},
}


def duckdb_raw(sql: str, root: Path) -> Callable[[], Rows]:
    def run() -> Rows:
        with duckdb.connect() as con:
            return con.execute(sql.format(root=root)).fetchall()
    return run


def load_sqlite(warehouse: Path, path: Path) -> sqlite3.Connection:
    """The store's events copied into one SQLite table (indexed on the columns the queries filter by)."""
    con = sqlite3.connect(path)
    dataset = ds.dataset(warehouse / "events", format="parquet", partitioning="hive")
    columns = [f.name for f in dataset.schema]
    con.execute(f"create table events ({', '.join(columns)})")
    insert = f"insert into events values ({', '.join('?' * len(columns))})"
    for batch in dataset.to_batches(batch_size=50_000):
        frame = batch.to_pandas()
        for c in frame.select_dtypes(include=["datetimetz", "datetime"]).columns:
            frame[c] = frame[c].astype(str)
        con.executemany(insert, frame[columns].itertuples(index=False, name=None))
    con.execute("create index events_bk on events (benchmark, kind)")
    con.commit()
    return con
