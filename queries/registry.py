"""The view registry: every `queries/<group>/*.sql` file is one view, registered in dependency order.

Groups are folders by benchmark: core/ (events and the typed views every source fills),
delegate52/, decisionbench/, entcollabbench/, ... A view's unit tests sit in
tests/views/<group>/<view>.yaml.

A view file is plain DuckDB SQL a researcher can paste into a DuckDB shell:
a comment block whose first line is the one-line description, then one
`CREATE OR REPLACE VIEW name AS ...` statement. sqlglot reads the name and the
relations each view reads, so files need no hand-kept order.

A comment line `-- tracewh: materialize` marks a building block that many views read
(the DecisionBench step tagger, for one): a connection computes it once, when a query
first needs it, instead of once per reference (docs/performance.md).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import sqlglot
from sqlglot import exp

from ..errors import TracewhError

QUERIES_DIR = Path(__file__).parent
logging.getLogger("sqlglot").setLevel(logging.ERROR)  # its "falling back to a Command" notes are not for users
# Defined by the warehouse connection, not by a file: the committed Parquet files.
SOURCE_RELATIONS = frozenset({"events_raw"})
MATERIALIZE = "-- tracewh: materialize"


@dataclass(frozen=True)
class ViewDef:
    name: str
    description: str
    sql: str
    path: Path
    depends: frozenset[str]
    materialize: bool = False

    @property
    def group(self) -> str:
        """The folder: core or a benchmark."""
        return self.path.parent.name


def _description(sql: str, path: Path) -> str:
    for line in sql.splitlines():
        if line.startswith("--"):
            return line.lstrip("-").strip()
    raise TracewhError(f"{path.name}: a view file starts with a '-- one-line description' comment")


def parse_view(path: Path) -> ViewDef:
    sql = path.read_text()
    try:
        statement = sqlglot.parse_one(sql, read="duckdb")
    except sqlglot.ParseError as e:
        raise TracewhError(f"{path.name}: {e}") from None
    if not isinstance(statement, exp.Create) or statement.kind != "VIEW":
        raise TracewhError(f"{path.name}: expected one CREATE VIEW statement")
    name = statement.this.name
    if name != path.stem:
        raise TracewhError(f"{path.name}: defines view {name!r}; a file is named after its view")
    ctes = {cte.alias_or_name for cte in statement.find_all(exp.CTE)}
    reads = {t.name for t in statement.expression.find_all(exp.Table)} - ctes - {name}
    return ViewDef(name, _description(sql, path), sql, path, frozenset(reads), MATERIALIZE in sql.splitlines())


@cache
def load_views() -> tuple[ViewDef, ...]:
    """All views, each after the views it reads."""
    views = {v.name: v for v in map(parse_view, sorted(QUERIES_DIR.glob("*/*.sql")))}
    graph = {name: {d for d in v.depends if d in views} for name, v in views.items()}
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as e:
        raise TracewhError(f"views read each other in a cycle: {e.args[1]}") from None
    return tuple(views[name] for name in order)


def views_needed(tables: Iterable[str]) -> list[ViewDef]:
    """The views among `tables`, and the views those read, in creation order."""
    views = load_views()
    by_name = {v.name: v for v in views}
    wanted, stack = set(), [t for t in tables if t in by_name]
    while stack:
        name = stack.pop()
        if name not in wanted:
            wanted.add(name)
            stack += [d for d in by_name[name].depends if d in by_name]
    return [v for v in views if v.name in wanted]
