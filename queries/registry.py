"""The view registry: every `queries/<group>/*.sql` file is one view, registered in dependency order.

Groups are folders by benchmark: core/ (events and the typed views every source fills),
delegate52/, decisionbench/, entcollabbench/, ... A view's unit tests sit in
tests/views/<group>/<view>.yaml.

A view file is plain DuckDB SQL a researcher can paste into a DuckDB shell:
a comment block whose first line is the one-line description, then one
`CREATE OR REPLACE VIEW name AS ...` statement. DuckDB's own parser reads the relations
each view reads, so files need no hand-kept order.

A comment line starting `-- tracewh: materialize` marks a building block that many views
read (the DecisionBench step tagger, for one) or a headline view: the compiled catalog
holds it computed, once per store version (queries/catalog.py; without a catalog, a
connection computes it when a query first needs it). docs/performance.md.
`-- tracewh: materialize by run_id` also declares the view run-local: its rows for a run
depend only on that run's events (in `events`, corrections applied), so a newer version's
catalog recomputes it for the runs a commit touched only. A plain view may declare the same with a line
`-- tracewh: by run_id`: a newer version's catalog then asks it whether a commit changed it
instead of assuming so. `-- tracewh: materialize by trace_id` declares a building block
trace-local: its rows carry run_id and trace_id, and its rows for a (run, trace) pair depend only
on that pair's events (events without a trace id being one pair of their run); a newer
version's catalog recomputes it for the pairs a commit touched only, so a commit into a long run
costs the traces it adds, not the run. A run-local declaration may end `within <view>`, a
run-local view its rows' runs are all rows of (`-- tracewh: materialize by run_id within
dcb_runs`: a DecisionBench block has rows only for the runs dcb_runs lists); a newer version's
catalog then skips the block for a commit whose runs that view has no row for, before or after
(an OpenTelemetry commit is no DecisionBench run). docs/catalog.md; the declarations are checked
by tests/test_catalog_incremental.py, not trusted.

Nothing is declared for the event kinds a view reads: they are read from its SQL (`kinds_read`), so
that a newer version's catalog leaves a view whose kinds a commit holds no event of as it was (a
judgment's commit recomputes no DecisionBench block, a span's commit no judgment block).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import cache
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

from ..errors import TracewhError
from .parse import Tree, parse

QUERIES_DIR = Path(__file__).parent
CREATE_VIEW = re.compile(r"^\s*CREATE\s+OR\s+REPLACE\s+VIEW\s+(\w+)\s+AS\s+(.*)$", re.I | re.S)
# Defined by the warehouse connection, not by a file: the committed Parquet files.
SOURCE_RELATIONS = frozenset({"events_raw"})
MATERIALIZE = "-- tracewh: materialize"
MARKER = "-- tracewh:"
# "-- tracewh: materialize", "-- tracewh: materialize by run_id" or "by trace_id", "-- tracewh: by run_id",
# the run-local ones optionally followed by "within <view>"; then prose.
MARKER_LINE = re.compile(r"^-- tracewh: (?:(materialize)(?: by (\w+))?|by (\w+))(?: within (\w+))?(?:\s|$)")
LOCAL_KEYS = frozenset({"run_id", "trace_id"})  # a trace-local view is run-local too
# The events themselves, for the kinds a view reads: `events` is events_raw less the events that
# corrections hide (core/events.sql), so it is read like events_raw, corrections aside.
EVENT_RELATIONS = frozenset({"events", "events_raw"})


@dataclass(frozen=True)
class ViewDef:
    name: str
    description: str
    sql: str
    path: Path
    depends: frozenset[str]
    materialize: bool = False
    local_by: str | None = None  # "run_id" or "trace_id": declared run- or trace-local (the module's docstring)
    within: str | None = None  # a run-local view whose runs this one's rows are all of (the module's docstring)
    # the event kinds it reads from `events`/`events_raw` itself, not through other views (query_kinds);
    # None: any kind
    kinds: frozenset[str] | None = None

    @property
    def query(self) -> str:
        """The view's query alone, without `CREATE OR REPLACE VIEW name AS` (to compute it into a table)."""
        return CREATE_VIEW.search(_without_comments(self.sql)).group(2).rstrip().rstrip(";")

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
    """One view file: its name, description and the relations it reads, as DuckDB parses it."""
    sql = path.read_text()
    found = CREATE_VIEW.search(_without_comments(sql))
    if found is None:
        raise TracewhError(f"{path.name}: expected one CREATE OR REPLACE VIEW <name> AS <query> statement")
    name, body = found.group(1), found.group(2)
    if name != path.stem:
        raise TracewhError(f"{path.name}: defines view {name!r}; a file is named after its view")
    try:
        tree = parse(body.rstrip().rstrip(";"))
    except TracewhError as e:
        raise TracewhError(f"{path.name}: {e}") from None
    reads = tree.tables() - tree.cte_names() - {name}
    materialize, local_by, within = _marker(sql, path)
    return ViewDef(name, _description(sql, path), sql, path, frozenset(reads), materialize, local_by, within,
                   query_kinds(tree))


def query_kinds(tree: Tree) -> frozenset[str] | None:
    """The event kinds a query reads from `events`/`events_raw` directly. Each such read must be
    the whole FROM of its SELECT, whose WHERE requires `kind = '...'` or `kind IN (...)`, or
    `supersedes IS NOT NULL` (corrections only, which count as no kind: see kinds_read). None (any
    kind) when a read is not filtered so, or when the query calls a table function."""
    if tree.table_functions():
        return None
    where_of = {id(node["from_table"]): node.get("where_clause") for node in tree.nodes()
                if node.get("type") == "SELECT_NODE" and isinstance(node.get("from_table"), dict)}
    kinds: set[str] = set()
    for ref, ctes in tree.references():
        name = str(ref.get("table_name", "")).lower()
        if name not in EVENT_RELATIONS or name in ctes:
            continue
        names = {name, str(ref["alias"]).lower()} if ref.get("alias") else {name}
        found = None if ref.get("schema_name") or ref.get("catalog_name") else \
            _kinds_required(where_of.get(id(ref)), names)
        if found is None:
            return None
        kinds |= found
    return frozenset(kinds)


def _kinds_required(where: dict | None, names: set[str]) -> set[str] | None:
    """The kinds a WHERE clause's top-level conjuncts leave (an empty set for corrections only);
    None when none of them says. `names`: what a column of the read relation may be qualified by."""
    allowed: set[str] | None = None
    left = [where] if where else []
    while left:
        node = left.pop()
        if node.get("type") == "CONJUNCTION_AND":
            left += node["children"]
        elif (found := _kinds_of(node, names)) is not None:
            allowed = found if allowed is None else allowed & found
    return allowed


def _kinds_of(node: dict, names: set[str]) -> set[str] | None:
    """`kind = 'x'`, `'x' = kind`, `kind IN ('x', ...)`: those kinds; `supersedes IS NOT NULL`: none."""
    def column(expr: dict, wanted: str) -> bool:
        parts = [str(p).lower() for p in expr.get("column_names", [])] if expr.get("class") == "COLUMN_REF" else []
        return bool(parts) and parts[-1] == wanted and (len(parts) == 1 or (len(parts) == 2 and parts[0] in names))

    def text(expr: dict) -> str | None:
        literal = expr.get("literal") if expr.get("class") == "CONSTANT" else None
        return literal.get("text") if isinstance(literal, dict) and literal.get("kind") == "STRING" else None

    kind = node.get("type")
    if kind == "COMPARE_EQUAL":
        for one, other in ((node["left"], node["right"]), (node["right"], node["left"])):
            if column(one, "kind") and text(other) is not None:
                return {text(other)}
    elif kind == "COMPARE_IN" and column(node["children"][0], "kind"):
        values = [text(child) for child in node["children"][1:]]
        return set(values) if None not in values else None
    elif kind == "OPERATOR_IS_NOT_NULL" and column(node["children"][0], "supersedes"):
        return set()
    return None


def _marker(sql: str, path: Path) -> tuple[bool, str | None, str | None]:
    """(materialized?, the key it is local by, the view its runs are within, if declared) from the
    `-- tracewh: ...` line."""
    for line in sql.splitlines():
        if line.startswith(MARKER):
            found = MARKER_LINE.match(line)
            key = found and (found.group(2) or found.group(3))
            if found is None or (key is not None and key not in LOCAL_KEYS) or found.group(3) == "trace_id" \
                    or (found.group(4) and key is None):
                raise TracewhError(f"{path.name}: expected '{MATERIALIZE}', '{MATERIALIZE} by run_id', "
                                   f"'{MATERIALIZE} by trace_id' or '{MARKER} by run_id', the run-local ones "
                                   f"optionally followed by 'within <view>', got {line!r}")
            return found.group(1) is not None, key, found.group(4)
    return False, None, None


def _without_comments(sql: str) -> str:
    return "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--"))


@dataclass(frozen=True)
class ViewHeader:
    """What a view file says of itself in its first lines: no SQL parsed."""

    name: str
    description: str
    group: str


@cache
def view_headers() -> tuple[ViewHeader, ...]:
    """Every view's name, description and group, in name order, cheaply."""
    return tuple(ViewHeader(p.stem, _description(p.read_text(), p), p.parent.name)
                 for p in sorted(QUERIES_DIR.glob("*/*.sql"), key=lambda p: p.stem))


def view_names() -> list[str]:
    return [v.name for v in view_headers()]


@cache
def load_views() -> tuple[ViewDef, ...]:
    """All views, each after the views it reads."""
    views = {v.name: v for v in map(parse_view, sorted(QUERIES_DIR.glob("*/*.sql")))}
    graph = {name: {d for d in v.depends if d in views} for name, v in views.items()}
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as e:
        raise TracewhError(f"views read each other in a cycle: {e.args[1]}") from None
    for view in views.values():
        _check_within(view, views)
    return tuple(views[name] for name in order)


def reads_all(views: dict[str, ViewDef], name: str, stop: Collection[str] = ()) -> set[str]:
    """View `name` and every view of `views` it reads, directly or not; what a view named in
    `stop` reads is not followed (other than `name`'s own reads)."""
    found, stack = set(), [name]
    while stack:
        if (next_name := stack.pop()) in views and next_name not in found:
            found.add(next_name)
            if next_name == name or next_name not in stop:
                stack += views[next_name].depends
    return found


def kinds_read(views: dict[str, ViewDef], name: str) -> frozenset[str] | None:
    """The event kinds view `name`'s rows derive from, through every view it reads; None: any kind
    (or not known). Corrections are read by every view of `events` and count as no kind: a commit
    that holds one may change any view."""
    if name in EVENT_RELATIONS or name not in views:
        return None
    kinds: set[str] = set()
    for read in reads_all(views, name, stop=EVENT_RELATIONS) - EVENT_RELATIONS:
        view = views[read]
        if view.kinds is None or any(d not in views and d not in EVENT_RELATIONS for d in view.depends):
            return None
        kinds |= view.kinds
    return frozenset(kinds)


def _check_within(view: ViewDef, views: dict[str, ViewDef]) -> None:
    """`within X`: X must be a run-local view that `view` reads, directly or not (so the catalog
    has computed X's rows of a commit's runs when it comes to `view`)."""
    if view.within is None:
        return
    if view.within not in reads_all(views, view.name) - {view.name} or not views[view.within].local_by:
        raise TracewhError(f"{view.path.name}: 'within {view.within}' names a view it does not read or that is "
                           "not declared run-local ('-- tracewh: by run_id')")


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
