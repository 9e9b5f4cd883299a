"""The SQL guard against every escape found so far, then a differential fuzz of it.

Part 1, regressions. Each query below once got past the guard or crashed it. Through every door
(the real `tracewh sql`, `Warehouse.query`, the HTTP service) each is refused: exit 2 and one
line on stderr, or HTTP 400 with a JSON body; no file is written, the store is byte for byte
as it was, and the engine's settings are as they were.

Part 2, the fuzz. Random texts (SQL words, quotes of every kind, backslashes, comments,
semicolons, dollar quotes, Unicode, COPY/ATTACH/SET/INSTALL/LOAD/PRAGMA/CALL/EXPORT, table
functions, paths, URLs, nesting) x every dialect tracewh reads x both modes (CLI and service).
Whatever the text, what the engine is asked to run is one read-only statement as DuckDB's own
parser reads it, nothing else runs, and only tracewh errors come back.
"""

from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from fastapi.testclient import TestClient
from hardening import HEAVY, count, fingerprint, one_line
from helpers import service_clients, tracewh

import tracewh as tw
from tracewh.demo.agent_runs import write_demo_runs
from tracewh.errors import QueryError, TracewhError
from tracewh.queries.engine import QueryEngine
from tracewh.queries.guard import _dialects, prepare_query

SPARK_FAMILY = ["spark", "hive", "databricks", "bigquery", "clickhouse", "spark2", "snowflake", "redshift"]
DIALECTS = _dialects()


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A small store of demo agent runs, its query catalog compiled (reads then write nothing)."""
    tmp = tmp_path_factory.mktemp("guard")
    wh = tw.open(tmp / "wh")
    wh.ingest(write_demo_runs(tmp / "runs", tasks=2))
    wh.query("select count(*) from runs")
    return wh.path


@pytest.fixture
def canary(tmp_path, monkeypatch) -> Path:
    """Where escapes try to write; also the working directory, so relative paths land here too."""
    folder = tmp_path / "canary"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


@pytest.fixture(scope="module")
def client(store) -> Iterator[TestClient]:
    with service_clients() as make:
        yield make(store, query_seconds=5)


def settings(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return con.execute("select name, value from duckdb_settings() order by name").fetchall()


# -- part 1: every escape found on the old code --------------------------------------------------

def escapes(canary: Path, committed: str) -> dict[str, tuple[str, str]]:
    """name -> (dialect, query): writes, attaches, installs, loads and settings, refused everywhere."""
    copy = f"COPY (select 42 as x) TO '{canary}/x.csv'"
    found = {f"quoted backslash then COPY ({d})": (d, f'EXPLAIN select 1 as "a\\\\"; {copy}; --"') for d in SPARK_FAMILY}
    return found | {
        "one backslash then COPY (spark)": ("spark", f'EXPLAIN select 1 as "a\\"; {copy}; --"'),
        "COPY over a committed Parquet file": ("spark", f'EXPLAIN select 1 as "a\\\\"; COPY (select 42 as x) '
                                                         f"TO '{committed}' (FORMAT parquet); --\""),
        "a second statement": ("duckdb", f"select 1; {copy}"),
        "EXPLAIN of a COPY": ("duckdb", f"explain {copy}"),
        "COPY inside query()": ("duckdb", "select * from query('" + copy.replace("'", "''") + "')"),
        "ATTACH": ("duckdb", f"ATTACH '{canary}/x.db' AS x"),
        "INSTALL": ("duckdb", "INSTALL httpfs"),
        "LOAD": ("duckdb", "LOAD httpfs"),
        "SET": ("duckdb", "SET threads = 1"),
        "SET VARIABLE": ("duckdb", "SET VARIABLE v = 1"),
        "RESET": ("duckdb", "RESET memory_limit"),
        "PRAGMA": ("duckdb", "PRAGMA threads = 1"),
        "CALL": ("duckdb", "CALL force_checkpoint()"),
        "EXPORT": ("duckdb", f"EXPORT DATABASE '{canary}/dump'"),
        "CREATE MACRO": ("duckdb", "CREATE MACRO m(x) AS x"),
        "CHECKPOINT": ("duckdb", "CHECKPOINT"),
        "UPDATE EXTENSIONS": ("duckdb", "UPDATE EXTENSIONS"),  # found by the fuzz: its type had no name, a traceback
    }


@pytest.fixture
def committed(store) -> str:
    wh = tw.open(store)
    return wh.store.files(wh.version)[0]


def test_escapes_are_refused_by_the_real_cli(store, canary, committed):
    before = fingerprint(store)
    for name, (dialect, query) in escapes(canary, committed).items():
        result = tracewh("sql", query, "--dialect", dialect, "-w", store, cwd=canary)
        assert result.code == 2 and one_line(result.err), (name, result.err)
        assert list(canary.iterdir()) == [], name
    assert fingerprint(store) == before


def test_escapes_are_refused_by_the_python_api(store, canary, committed):
    wh = tw.open(store)
    before, configured = fingerprint(store), settings(wh.con)
    for name, (dialect, query) in escapes(canary, committed).items():
        with pytest.raises(TracewhError) as refused:
            wh.query(query, dialect=dialect)
        assert refused.value.exit_code == 2, name
        assert list(canary.iterdir()) == [] and settings(wh.con) == configured, name
    assert fingerprint(store) == before


def test_escapes_are_refused_by_the_service(store, canary, committed, client):
    before = fingerprint(store)
    for name, (dialect, query) in escapes(canary, committed).items():
        response = client.post("/sql", json={"query": query, "dialect": dialect})
        assert response.status_code == 400 and response.json()["error"] == "QueryError", (name, response.text)
        assert list(canary.iterdir()) == [], name
    assert fingerprint(store) == before


def revealing(store: Path) -> dict[str, str]:
    """Queries that read the store's files directly or printed the server's paths and settings."""
    log = f"{store}/events/_delta_log/00000000000000000000.json"
    return {
        "query() reading the Delta log": f"select * from query('select * from read_text(''{log}'')')",
        "a CTE named like a path": f'with "{log}" as (select 1) select * from "{log}"',
        "current_setting": "select current_setting('allowed_directories')",
        "duckdb_settings()": "select * from duckdb_settings()",
        "duckdb_views()": "select * from duckdb_views()",
        # found by this suite: DuckDB's own catalog views answer to plain names
        "pg_settings": "select setting from pg_settings where name = 'allowed_directories'",
        "duckdb_databases": "select path from duckdb_databases",
        "pragma_database_list": "select * from pragma_database_list",
        "sqlite_master": "select sql from sqlite_master where name = 'events_raw'",
        "pg_views": "select definition from pg_views",
        "pg_get_viewdef": "select pg_get_viewdef(oid) from (select unnest(range(100000)) as oid)",
        "SHOW of a catalog view": "show pg_settings",
        "DESCRIBE of a catalog view": "describe duckdb_databases",
        # ... and a CTE's name is a catalog lookup outside its scope
        "a CTE name used outside its scope": "select * from (with pg_settings as (select 1) from pg_settings), pg_settings",
        "a CTE name used before its CTE": "with a as (from pg_settings), pg_settings as (select 1) from a",
        "a CTE reading its own name": "with pg_settings as (from pg_settings) from pg_settings",
        "a WITH inside one side of a UNION": "(with pg_settings as (select 1) from pg_settings) union all from pg_settings",
    }


def test_the_service_reads_only_the_store_and_reveals_no_path(store, client):
    for name, query in revealing(store).items():
        response = client.post("/sql", json={"query": query})
        assert response.status_code == 400 and response.json()["error"] == "QueryError", (name, response.text)
        assert str(store) not in response.text, name


@pytest.mark.parametrize("query", [
    "with x as (select 1 as a) select * from x", "with recursive t(n) as (select 1 union all select n + 1 from t "
    "where n < 3) select * from t", "with r as (from runs) from r union all from r",
    "with a as (select 1 as v), b as (from a) from b", "select * from RUNS", "describe runs", "summarize llm_calls",
    "show tables", "pivot runs on model in ('gpt-5.4') using count(*)", "select * from range(3)",
    "select (select count(*) from events) as n", "from events_raw limit 1",
])
def test_the_service_still_answers_what_reads_the_store(client, query):
    assert client.post("/sql", json={"query": query}).status_code == 200


@pytest.mark.parametrize("args, code", [
    (["select 1 /* /* */", "--dialect", "spark"], 2),  # sqlglot's TokenError
    (["select 1", "--dialect", "no-such-dialect"], 2),
    (["select 'x'::blob as b", "-f", "json"], 0),
    (["select * from force_checkpoint()"], 2),
    (["select " + "(" * 5000 + "1" + ")" * 5000], 2),
    (["select 1 as one --"], 0),
    (["select 'infinity'::date as d, '294247-01-01'::date as far", "-f", "json"], 0),
])
def test_queries_that_crashed_end_in_one_line(store, args, code):
    result = tracewh("sql", *args, "-w", store)
    assert result.code == code, result.err
    assert "Traceback" not in result.err and (code == 0 or one_line(result.err))


def test_values_python_cannot_hold_are_a_clean_refusal(store, client):
    """Found by this suite: a date past year 9999 made Arrow's conversion raise OverflowError, a 500."""
    for query in ["select 'infinity'::date as d", "select '294247-01-01'::date as d", "select '-infinity'::timestamptz"]:
        response = client.post("/sql", json={"query": query})
        assert response.status_code == 400 and "cast that column to VARCHAR" in response.json()["detail"], response.text
        with pytest.raises(TracewhError, match="no Python equivalent"):
            tw.open(store).query(query).tuples()


def test_a_lone_surrogate_is_refused_cleanly(store, client):
    """Found by this suite: a non-UTF-8 byte in argv, or "\\ud800" in JSON, made DuckDB's binding raise TypeError."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable.encode(), b"-m", b"tracewh", b"sql", b"select '\xff'", b"-w", bytes(store)],
                          capture_output=True, timeout=120)
    assert proc.returncode == 2 and one_line(proc.stderr.decode(errors="replace")), proc.stderr
    response = client.post("/sql", content=b'{"query": "select \'\\ud800\'"}', headers={"content-type": "application/json"})
    # the guard's 400, or (the body read as strict JSON) a 422 saying the JSON is invalid: never a 500
    assert (response.status_code == 400 and "surrogate" in response.json()["detail"]) or \
        (response.status_code == 422 and response.json()["detail"][0]["type"] == "json_invalid"), response.text


def test_a_url_never_installs_an_extension(store, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    for query in ["select * from 'http://127.0.0.1:9/x.csv'", "select * from read_parquet('s3://bucket/x.parquet')"]:
        result = tracewh("sql", query, "-w", store, env=os.environ | {"HOME": str(home)})
        assert result.code == 2 and one_line(result.err) and "httpfs" in result.err, result.err
    assert list(home.iterdir()) == []  # no ~/.duckdb/extensions


def test_huge_offsets_are_refused_not_crashed(client):
    for offset in ["1e30", str(10**30), "-1"]:
        response = client.get("/views/events", params={"offset": offset})
        assert response.status_code == 422 and "detail" in response.json(), offset


# -- part 2: the differential fuzz ---------------------------------------------------------------

WORDS = ["select", "from", "where", "with", "as", "recursive", "union all", "explain", "explain analyze", "describe",
         "show", "summarize", "pivot", "unpivot", "on", "using", "in", "values", "table", "limit 1", "order by 1",
         "group by all", "join", "lateral", "qualify", "case when 1 then 2 end", "not", "or 1=1", "1", "null", "*",
         "materialized", "returning", "into", "by name", "exclude", "replace", "columns(*)", "count(*)", "sum(1)"]
QUOTES = ["'", '"', "`", "\\", "\\\\", "''", '""', "$$", "$q$", "E'", "U&'", "[", "]", "\\'", '\\"', "'''", '"""']
COMMENTS = ["--", "/*", "*/", "/* /* */", "#", "-- x\n", "/*+ hint */", "//", "{{fn", "}}"]
PUNCT = [";", ";;", "(", ")", ",", ".", "::", ":=", "->>", "=", "\n", "\t", "\r", "\x0b", "\u00a0", "?", "$1", "@x"]
UNICODE = ["é", "∑", "\u202e", "\ufeff", "；", "＇", "\u2028", "🧪", "\u0000", "ǅ", "İ", "ß", "\u0301"]
STATEMENTS = ["COPY (select 1) TO '{canary}/c.csv'", "COPY events TO '{canary}/e.parquet' (FORMAT parquet)",
              "COPY runs FROM '{canary}/r.csv'", "ATTACH '{canary}/a.db' AS a", "DETACH catalog", "USE memory",
              "SET threads = 1", "SET GLOBAL memory_limit = '1GB'", "RESET memory_limit", "SET lock_configuration = false",
              "SET enable_external_access = true", "SET VARIABLE v = 1", "INSTALL httpfs", "FORCE INSTALL httpfs",
              "LOAD httpfs", "LOAD '{canary}/x.duckdb_extension'", "UPDATE EXTENSIONS", "PRAGMA enable_profiling",
              "PRAGMA threads = 1", "CALL force_checkpoint()", "CALL pragma_version()", "EXPORT DATABASE '{canary}/db'",
              "IMPORT DATABASE '{canary}/db'", "CHECKPOINT", "VACUUM", "ANALYZE", "CREATE TABLE t AS SELECT 1",
              "CREATE TEMP TABLE t AS FROM runs", "CREATE MACRO m(x) AS x", "CREATE SECRET (TYPE s3)",
              "CREATE TYPE e AS ENUM ('a')", "CREATE VIEW runs AS SELECT 1", "DROP VIEW runs", "INSERT INTO t VALUES (1)",
              "UPDATE events SET model = 'x'", "DELETE FROM events", "ALTER VIEW runs RENAME TO r", "BEGIN", "COMMIT",
              "ROLLBACK", "PREPARE p AS SELECT 1", "EXECUTE p", "DEALLOCATE p", "COPY FROM DATABASE memory TO a",
              "create table t as pivot runs on model"]
TABLE_FUNCTIONS = ["read_csv('{canary}/x.csv')", "read_csv('/etc/hostname')", "read_text('/etc/hostname')",
                   "read_parquet('{store}/events/*/*.parquet')", "read_json('{store}/events/_delta_log/*.json')",
                   "glob('{canary}/*')", "query('select 1')", "query('COPY (select 1) TO ''{canary}/q.csv''')",
                   "query_table('runs')", "duckdb_settings()", "duckdb_databases()", "pragma_database_list()",
                   "range(3)", "generate_series(1, 3)", "unnest([1, 2])", "sniff_csv('/etc/hostname')",
                   "parquet_metadata('{store}/events/*/*.parquet')", "checkpoint()", "force_checkpoint()",
                   "which_secret('s3://x', 's3')", "json_each('{{}}')", "iceberg_scan('x')", "delta_scan('{store}/events')",
                   "sqlite_scan('{canary}/s.db', 't')", "read_blob('{canary}/*')", "duckdb_functions()"]
SCALARS = ["current_setting('allowed_directories')", "getenv('HOME')", "pg_get_viewdef(1)", "version()", "setseed(0.5)",
           "current_query()", "getvariable('v')", "list(1)", "error('boom')", "repeat('x', 10)", "'infinity'::date",
           "now()", "pg_sleep(0)", "current_database()", "has_table_privilege('runs', 'select')"]
NAMES = ["events", "runs", "llm_calls", "events_raw", "pg_settings", "sqlite_master", "duckdb_databases",
         "information_schema.tables", "memory.main.x", "catalog.runs", '"tables"', "tracewh_cache_runs",
         "'{canary}/x.csv'", "'/etc/hostname'", "'http://127.0.0.1:9/x.csv'", "'s3://b/k.parquet'", "'~/x.csv'",
         "'{store}/events/_delta_log/00000000000000000000.json'", '"{store}/events/_delta_log/00000000000000000000.json"']
FRAGMENTS = [WORDS, QUOTES, COMMENTS, PUNCT, UNICODE, STATEMENTS, TABLE_FUNCTIONS, SCALARS, NAMES]


class Texts:
    """A seeded generator of query texts: random fragments, and templates that put a statement
    after something that might hide it (a quote, an escape, a comment, a dollar quote)."""

    def __init__(self, seed: int, canary: Path, store: Path):
        self.rng, self.canary, self.store = random.Random(seed), canary, store

    def pick(self, items: list[str]) -> str:
        return self.rng.choice(items).format(canary=self.canary, store=self.store)

    def pieces(self, most: int) -> str:
        joints = [" ", "", "\n", " "]
        return "".join(self.pick(self.rng.choice(FRAGMENTS)) + self.rng.choice(joints)
                       for _ in range(self.rng.randint(1, most)))

    def text(self, depth: int = 0) -> str:
        some, bad, name = self.pieces(6), self.pick(STATEMENTS), self.pick(NAMES)
        q, lead = self.pick(QUOTES), self.rng.choice(["", "EXPLAIN ", "explain analyze ", "/* */ ", "("])
        forms = [lambda: self.pieces(14), lambda: f"select {some}", lambda: f"select {some} from {name}",
                 lambda: f'{lead}select 1 as {q}a{self.pick(QUOTES)}{q}; {bad}; --{q}', lambda: f"select {q}{some}{q}; {bad}",
                 lambda: f"{lead}{some}; {bad}", lambda: f"with {name} as ({some}) select * from {name}",
                 lambda: f"select * from {self.pick(TABLE_FUNCTIONS)} {some}", lambda: f"select {self.pick(SCALARS)}",
                 lambda: bad, lambda: f"select 1 /* {some} */; {bad}", lambda: f"select $${some}$$; {bad}",
                 lambda: f"select $t${some}$t$ {some}", lambda: "(" * self.rng.randint(1, 300) + f"select {some}" + ")" * 3,
                 lambda: f"select * from ({self.text(depth + 1)})" if depth < 3 else some,
                 lambda: f"{self.text(depth + 1)}; {self.text(depth + 1)}" if depth < 2 else some,
                 *self.hiding_places(some, bad)]
        return self.rng.choice(forms)()

    def hiding_places(self, some: str, bad: str) -> list:
        """Valid literals and identifiers holding anything, a statement included: DuckDB must write
        them back (the text that runs is regenerated) without letting it out."""
        inside = f"{some}; {bad}; --"
        return [lambda: "select '" + inside.replace("'", "''") + "' as s from runs",
                lambda: 'select 1 as "' + inside.replace('"', '""') + '"',
                lambda: "select $$" + inside.replace("$", "") + "$$ as s",
                lambda: "select E'" + inside.replace("\\", "\\\\").replace("'", "\\'") + "' as s",
                lambda: "select * from runs where model = '" + inside.replace("'", "''") + "'"]


CHECKER = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
EXPLAIN = re.compile(r"^\s*explain\s+(analyze\s+)?", re.I)


def not_read_only(sql: str, service: bool) -> str | None:
    """None when DuckDB itself reads `sql` as one read-only statement: a SELECT, EXPLAIN of one, or
    (CLI only) a PIVOT without its values; else what it is."""
    try:
        statements = CHECKER.extract_statements(sql)
    except duckdb.ParserException:
        return None  # text DuckDB cannot parse runs nothing
    if len(statements) != 1:
        return f"{len(statements)} statements"
    try:
        kind = statements[0].type.name
    except ValueError:
        return "a statement of a type the Python binding cannot name"
    if kind == "EXPLAIN":
        found = EXPLAIN.match(sql)
        return not_read_only(sql[found.end():], service) if found else "an EXPLAIN not of a query"
    if kind == "MULTI":
        return None if not service and sql.lstrip().upper().startswith("PIVOT") else f"MULTI in service={service}"
    if kind != "SELECT":
        return kind
    tree = json.loads(CHECKER.execute("select json_serialize_sql($1::varchar)", [sql]).fetchone()[0])
    return tree.get("error_message") if tree.get("error") else None


@pytest.fixture
def recorded(monkeypatch) -> list[tuple[str, bool]]:
    """Every query the engine is asked to run, whether its settings moved, as (sql, settings unchanged)."""
    calls: list[tuple[str, bool]] = []
    execute = QueryEngine.execute

    def recording(engine, query, params=None, limits=None):
        before = settings(engine.con)
        try:
            return execute(engine, query, params, limits)
        finally:
            calls.append((query, settings(engine.con) == before))

    monkeypatch.setattr(QueryEngine, "execute", recording)
    return calls


def run_cli_mode(wh: tw.Warehouse, text: str, dialect: str) -> str:
    try:
        wh.query(text, dialect=dialect, limit=20, timeout_s=2, arrow=False)
    except TracewhError as e:
        assert e.exit_code == 2, f"exit {e.exit_code}: {e}"
        return "refused"
    return "ran"


def run_service_mode(client: TestClient, store: Path, text: str, dialect: str) -> str:
    response = client.post("/sql", json={"query": text, "dialect": dialect})
    assert response.status_code in (200, 400, 408), response.text
    assert str(store) not in response.text or response.status_code == 200
    return "ran" if response.status_code == 200 else "refused"


def check_fuzz_case(calls, canary: Path, service: bool, label: str) -> None:
    assert len(calls) <= 1, f"{label}: {len(calls)} queries reached the engine"
    for sql, settled in calls:
        assert not_read_only(sql, service) is None, f"{label}: ran {sql!r}: {not_read_only(sql, service)}"
        assert settled, f"{label}: settings changed by {sql!r}"
    assert list(canary.iterdir()) == [], f"{label}: wrote {list(canary.iterdir())}"
    calls.clear()


FUZZ_TEXTS = count(ci=300, heavy=10_000)


@pytest.mark.heavy
def test_fuzzed_queries_reach_duckdb_only_as_one_read_only_statement(store, canary, recorded, new_service):
    """FUZZ_TEXTS texts, each in one dialect (cycling through all of them) and both modes."""
    before, texts = fingerprint(store), Texts(20261123, canary, store)
    wh = tw.open(store)
    service = new_service(store, query_seconds=2, raise_server_exceptions=False)
    configured, outcomes = settings(wh.con), {}
    for i in range(FUZZ_TEXTS):
        text, dialect = texts.text(), DIALECTS[i % len(DIALECTS)]
        label = f"#{i} {dialect} {text!r}"
        for mode, run in [("cli", lambda: run_cli_mode(wh, text, dialect)),
                          ("service", lambda: run_service_mode(service, store, text, dialect))]:
            try:
                outcome = run()
            except Exception as e:  # noqa: BLE001 - anything but a TracewhError is the finding
                raise AssertionError(f"{label} in {mode} mode: {type(e).__name__}: {e}") from e
            check_fuzz_case(recorded, canary, mode == "service", f"{label} ({mode})")
            outcomes[mode, outcome] = outcomes.get((mode, outcome), 0) + 1
    assert settings(wh.con) == configured and fingerprint(store) == before
    print(f"\n{FUZZ_TEXTS} texts x 2 modes over {len(DIALECTS)} dialects: {outcomes}")
    assert outcomes.get(("cli", "ran"), 0) > FUZZ_TEXTS // 50, "the generator must also make queries that run"


@pytest.mark.heavy
def test_fuzzed_queries_through_the_real_cli(store, canary):
    texts, before = Texts(7, canary, store), fingerprint(store)
    for i in range(count(ci=6, heavy=150)):
        text, dialect = texts.text().replace("\x00", ""), DIALECTS[(i * 7) % len(DIALECTS)]
        result = tracewh("sql", text, "--dialect", dialect, "-w", store, cwd=canary)
        assert result.code in (0, 2) and (result.code == 0 or one_line(result.err)), (dialect, text, result.err)
        assert list(canary.iterdir()) == [], (dialect, text)
    assert fingerprint(store) == before


# -- part 3: whatever sqlglot or DuckDB raise, a refusal ----------------------------------------

# Literals and spellings whose reading raised something other than a ParseError in some dialect's
# tokenizer or parser (`B''`: ValueError from int('', 2) in postgres, mysql, doris, materialize,
# risingwave and starrocks, a 500 from the service and "internal error" from the CLI), and their
# neighbours: empty and malformed bit, hex and byte strings, numbers no float holds, dollar
# quotes, Unicode escapes, placeholders, parameters, odd prefixes.
ODD_LITERALS = ["B''", "b''", "X''", "x''", "x'zz'", "X'0'", "B'2'", "B'0' || B''", "0b", "0x", "0xg", "0o7", "0b102",
                "1e999999", "-1e999999", "1e", "1e+", ".e1", "1.2.3", "1__0", "1_000", "_1", "$$", "$$ x", "$1$",
                "$tag$ x", "$tag$ x $tag$", "U&'\\0000'", "U&'\\+FFFFFF'", "U&'\\d800'", 'U&"\\d800"',
                "U&'x' UESCAPE ''", "E'\\x'", "E'\\u'", "E'\\U0011FFFF'", "'\\u'", "'\\uD800'", "'\\", '"\\u"', "N''",
                "r''", "R'\\'", "q'[x]'", "n'x", "e'", "@@", "@x", "${a}", "{{x}}", "{fn now()}", "`", "[[", "?", ":x",
                "%s", "#x", "\\N",
                "date ''", "interval ''", "interval '1' fortnight", "timestamp 'x'", "cast('' as bit)", "x'0' :: int",
                "'a' collate ''", "1 between", "case", "array[", "struct(", "map{", "[1, 2][3:", "'''", '"""']
NESTED = {"parentheses": "select " + "(" * 5000 + "1" + ")" * 5000, "subqueries": "select (" * 3000 + "1" + ")" * 3000,
          "unary minus": "select " + "-" * 20000 + "1", "string concatenation": "select " + " || ".join(["'a'"] * 2000),
          "CASE": "select " + "case when true then " * 1000 + "1" + " end" * 1000}
# CI reads them in one dialect of each family sqlglot has (and those that raised); heavy runs in all
# of them, each literal in three places and both modes.
FAMILIES = ["duckdb", "postgres", "mysql", "doris", "materialize", "spark", "bigquery", "snowflake", "tsql",
            "clickhouse", "oracle", "trino", "sqlite", "teradata", "prql"]
ODD_DIALECTS = DIALECTS if HEAVY else FAMILIES


def guard_outcome(text: str, dialect: str, service: bool) -> str:
    """'ran' or 'refused': anything but a QueryError out of the guard fails the test, naming the case."""
    try:
        prepare_query(text, dialect, service=service)
    except QueryError as e:
        assert one_line(str(e)), f"{dialect} {text!r}: {e!r}"
        return "refused"
    except Exception as e:  # noqa: BLE001 - the finding
        raise AssertionError(f"{dialect} {text[:80]!r} (service={service}): {type(e).__name__}: {e}") from e
    return "ran"


@pytest.mark.parametrize("dialect", ODD_DIALECTS)
def test_odd_literals_are_read_or_refused_in_every_dialect(dialect):
    places = ["select {}", "select {} as a from runs", "select 1 where {} = {}"] if HEAVY else ["select {}"]
    for literal in ODD_LITERALS:
        for place in places:
            for service in ((False, True) if HEAVY else (True,)):
                guard_outcome(place.format(literal, literal), dialect, service)


@pytest.mark.parametrize("depth", NESTED)
def test_deep_nesting_is_refused_in_every_dialect(depth):
    """Deep nesting ran sqlglot and json out of stack (RecursionError) in some dialects."""
    for dialect in ODD_DIALECTS:
        guard_outcome(NESTED[depth], dialect, service=True)


def test_an_empty_bit_string_is_read_or_refused_by_every_door(store, client):
    """Found by the issue's fuzz: `B''` made sqlglot's postgres reader (and five more) raise
    ValueError: a 500 from the service, "internal error" from the CLI, a ValueError from query()."""
    wh = tw.open(store)
    for dialect in DIALECTS:
        for spelling in ["B''", "b''"]:
            try:
                wh.query(f"select {spelling}", dialect=dialect)
            except QueryError as refused:
                assert one_line(str(refused)), (dialect, refused)
            response = client.post("/sql", json={"query": f"select {spelling}", "dialect": dialect})
            assert response.status_code in (200, 400), (dialect, response.text)
            assert response.status_code == 200 or response.json()["error"] == "QueryError", (dialect, response.text)
    result = tracewh("sql", "select B''", "--dialect", "postgres", "-w", store)
    assert result.code == 2 and one_line(result.err) and "postgres" in result.err, result.err


@pytest.mark.heavy
def test_fuzzed_odd_literals_never_raise_anything_but_a_query_error(canary, store):
    """Odd literals inside the fuzz's random texts, every dialect, both modes."""
    texts, rng = Texts(20261127, canary, store), random.Random(20261127)
    outcomes: dict[str, int] = {}
    for i in range(count(ci=100, heavy=10_000)):
        literal, text = rng.choice(ODD_LITERALS), texts.text()
        cut = rng.randint(0, len(text))
        text = rng.choice([f"select {literal}", f"{text[:cut]} {literal} {text[cut:]}", f"select {literal}, ({text})"])
        outcome = guard_outcome(text, DIALECTS[i % len(DIALECTS)], service=bool(i % 2))
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    print(f"\nodd literals in fuzzed texts: {outcomes}")
