"""The expectation suites run as SQL: each rule of rules.py compiled to DuckDB aggregates.

great-expectations (gate.py) stays the definition of what the suites mean and still runs
`tracewh check`; ingest's gate runs this compiled form, because importing GX and building
its context cost about 4 s a process, more than checking most batches. One aggregate query
over the check frame (rules.CHECK_COLUMNS_SQL) gives every rule's count of unexpected rows
and its first examples; a failed batch pays a second pass for the failing events' ids.
tests/test_quality_parity.py holds both to the same verdicts, counts, examples and events.

GX's column-map semantics, compiled generically from each Rule's expectation and kwargs:
NotBeNull counts the nulls; the other expectations ignore nulls and count the non-null
values outside the range (Between: min_value, max_value, strict_min, strict_max) or the set
(InSet: value_set). A rule of any other form is refused when the suites are compiled.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from ...warehouse.sqltext import literal
from .report import EXAMPLES, Failure, Report
from .rules import BY_KIND, CHECK_COLUMNS_SQL, COMMON, Rule

ALL_EVENTS = "all events"
MAX_FOLDERS = 1 << 11  # batches check_staged takes at once: their row numbers stay below 2^63


class UnsupportedRule(ValueError):
    """A rule whose expectation (or one of its kwargs) has no SQL form here yet."""


@dataclass(frozen=True)
class CompiledRule:
    suite: str
    rule: Rule
    unexpected: str  # SQL over the check frame: true on the rows that count against the rule


def compile_suites() -> list[CompiledRule]:
    """Every rule of every suite, in suite then rule order; a kind's suite covers its kind's rows."""
    scoped = [(ALL_EVENTS, COMMON, "true"), *((kind, rules, f"kind = {literal(kind)}") for kind, rules in BY_KIND.items())]
    return [CompiledRule(suite, rule, f"({scope}) and ({unexpected_sql(rule)})")
            for suite, rules, scope in scoped for rule in rules]


def unexpected_sql(rule: Rule) -> str:
    """The rows that count against `rule`, as GX's column-map expectation counts them."""
    column, kwargs = _quoted(rule.column), dict(rule.kwargs)
    if rule.expectation == "ExpectColumnValuesToNotBeNull":
        _no_more(rule, kwargs)
        return f"{column} is null"
    if rule.expectation == "ExpectColumnValuesToBeBetween":
        bounds = _bounds(column, kwargs)
        _no_more(rule, kwargs)
        return f"{column} is not null and not ({bounds})"
    if rule.expectation == "ExpectColumnValuesToBeInSet":
        values = ", ".join(_sql_value(v) for v in kwargs.pop("value_set"))
        _no_more(rule, kwargs)
        return f"{column} is not null and {column} not in ({values})"
    raise UnsupportedRule(f"{rule.name}: no SQL form for {rule.expectation}; add one in compiled.py")


def _bounds(column: str, kwargs: dict[str, Any]) -> str:
    low, high = kwargs.pop("min_value", None), kwargs.pop("max_value", None)
    strict_low, strict_high = kwargs.pop("strict_min", False), kwargs.pop("strict_max", False)
    if low is None and high is None:
        raise UnsupportedRule(f"{column}: ExpectColumnValuesToBeBetween needs min_value or max_value")
    parts = ([f"{column} {'>' if strict_low else '>='} {_sql_value(low)}"] if low is not None else []) + \
            ([f"{column} {'<' if strict_high else '<='} {_sql_value(high)}"] if high is not None else [])
    return " and ".join(parts)


def _no_more(rule: Rule, kwargs: dict[str, Any]) -> None:
    if kwargs:
        raise UnsupportedRule(f"{rule.name}: no SQL form for argument(s) {sorted(kwargs)}; add one in compiled.py")


def _quoted(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'


def _sql_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return literal(value)
    raise UnsupportedRule(f"no SQL literal for {value!r}")


# ------------------------------------------------------------------------- running
def check_relation(con: duckdb.DuckDBPyConnection, batch_sql: str) -> Report:
    """Check the events `batch_sql` selects (columns of the event schema plus `row_number`)."""
    con.execute(f"create or replace temp view batch as {batch_sql}")
    rules = compile_suites()
    # execute, not sql: a relation is planned once to learn its columns and again to run, and
    # planning is most of this query's cost on a small batch (22 ms against 16 on 31 events).
    report = Report(rows=con.execute("select count(*) from batch").fetchall()[0][0])
    found = {rule: (count, examples, ids) for rule, count, examples, ids in con.execute(_failures_sql(rules)).fetchall()}
    for i, r in enumerate(rules):
        if i in found:
            count, examples, ids = found[i]
            shown = [{"event_id": e["event_id"], "source": e["source"], "value": e[r.rule.column]} for e in examples]
            report.failures.append(Failure(r.suite, r.rule, count, shown, ids or []))
    return report


def _failures_sql(rules: list[CompiledRule]) -> str:
    """Per failed rule (by index): its count, first examples (the frame's rows) and failing event ids.

    One pass: every row is tested against every rule at once, and only failing rows go on to be
    grouped by rule (a query of a count and an example aggregate per rule cost 0.3 s a batch,
    however small, in planning alone)."""
    failing = " or ".join(f"({r.unexpected})" for r in rules)
    which = ", ".join(f"case when {r.unexpected} then {i} end" for i, r in enumerate(rules))
    errors = ", ".join(str(i) for i, r in enumerate(rules) if r.rule.severity == "error") or "null"
    return f"""
        select rule, count(*), arg_min(frame, row_number, {EXAMPLES}),
               list(event_id order by row_number) filter (where rule in ({errors}))
        from (select unnest(list_filter([{which}], lambda i: i is not null)) as rule, row_number, event_id, frame
              from ({CHECK_COLUMNS_SQL}) frame where {failing})
        group by rule"""


def check_staged(folders: list[Path], con: duckdb.DuckDBPyConnection) -> Report:
    """Batches being ingested (their staging folders), checked as one, folder after folder, each
    in the order its files were read (`con`: a connection for the batches).

    A batch's events may lie in several part files (a part per job when workers stage them,
    ingest/workers.py): `row_number` orders them part by part, in name order."""
    if len(folders) > MAX_FOLDERS:
        raise ValueError(f"at most {MAX_FOLDERS} batches are checked together")
    # The folder's place above the part's number (its name: stage.part_name) above the row's:
    # 2^40 rows a part, 2^12 parts a batch, ample.
    scans = " union all ".join(f"""
        select * exclude (filename, file_row_number),
               file_row_number + (regexp_extract(filename, 'part-([0-9]+)[.]parquet$', 1)::BIGINT << 40)
               + ({i}::BIGINT << 52) as row_number
        from read_parquet({literal(folder / "part-*.parquet")}, filename = true, file_row_number = true)"""
        for i, folder in enumerate(folders))
    return check_relation(con, scans)
