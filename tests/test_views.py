"""Unit tests of the SQL views, in the manner of SQLMesh model tests.

Each view has one YAML file, `tests/views/<group>/<view>.yaml`, holding its cases; a
researcher reads it beside `queries/<view>.sql`. Every case is one test of `test_view`:

    cases:
      - name: short_id              # the test id is <group>/<view>[short_id]
        description: what the case shows and why the expected numbers are what they are
        events:                     # event dicts; keys are event-schema columns, payload a mapping
          - {run_id: r1, benchmark: delegate52, kind: score, score: 0.9, payload: {...}}
        query: select ...           # optional; default `select * from <view> order by all`
        columns: [a, b]             # optional; default: every column the query returns
        expected:                   # rows in query order; keys = exactly the columns
          - {a: 1, b: 90.0}

Expected floats are compared with pytest.approx (rel 1e-9), DECIMAL results as floats;
JSON columns are parsed, so they compare with mappings and lists; everything else (ints,
text, booleans, null, lists) must be equal.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from tracewh.ingest.rows import Where, convert
from tracewh.schema import ARROW_SCHEMA
from tracewh.queries.engine import ViewCreator, define_events_raw

VIEWS = Path(__file__).parent / "views"
CASE_KEYS = {"name", "description", "events", "query", "columns", "expected"}


def write_events(events: list[dict[str, Any]], path: Path, label: str) -> Path:
    """Write a case's events to one Parquet file in the event schema, checked and typed as ingest does.

    Defaults, as for the native format: `seq` = the event's position (1-based), `event_id` =
    `ev<position>`, `batch_id` = `test`; `schema_version` is filled by `convert`. A bad event
    is refused as ingest would, naming `label` and the event's position as its "line".
    """
    rows = [convert({"event_id": f"ev{i}", "batch_id": "test", "seq": i, **event}, Where(label, i))
            for i, event in enumerate(events, start=1)]
    pq.write_table(pa.Table.from_pylist(rows, schema=ARROW_SCHEMA), path)
    return path


def _cases() -> list:
    params = []
    for file in sorted(VIEWS.glob("*/*.yaml")):
        for case in yaml.safe_load(file.read_text())["cases"]:
            params.append(pytest.param(file, case, id=f"{file.parent.name}/{file.stem}[{case['name']}]"))
    return params


def _value(value: Any, is_json: bool) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    return json.loads(value) if is_json and value is not None else value


def _expected(value: Any) -> Any:
    return pytest.approx(value, rel=1e-9) if isinstance(value, float) else value


@pytest.mark.parametrize("file, case", _cases())
def test_view(file: Path, case: dict[str, Any], tmp_path: Path) -> None:
    view = file.stem
    assert set(case) <= CASE_KEYS and {"description", "events", "expected"} <= set(case), sorted(case)
    query = case.get("query", f"select * from {view} order by all")
    assert re.search(rf"\b{view}\b", query), f"the query of a {view}.yaml case must read {view}"

    parquet = write_events(case["events"], tmp_path / "events.parquet", f"{file.name}[{case['name']}] events")
    con = duckdb.connect()
    define_events_raw(con, [str(parquet)])
    ViewCreator(con).for_query(query)
    cursor = con.execute(query)
    names = [d[0] for d in cursor.description]
    json_columns = {d[0] for d in cursor.description if str(d[1]) == "JSON"}
    columns = case.get("columns", names)
    assert set(columns) <= set(names), f"columns not returned: {sorted(set(columns) - set(names))}"
    for row in case["expected"]:
        assert sorted(row) == sorted(columns), f"expected row keys {sorted(row)} != columns {sorted(columns)}"

    got = [dict(zip(names, row)) for row in cursor.fetchall()]
    assert [{c: _value(r[c], c in json_columns) for c in columns} for r in got] == \
           [{c: _expected(r[c]) for c in columns} for r in case["expected"]]
