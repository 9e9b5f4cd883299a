"""The one way in: `tracewh.open()` returns a Warehouse, and the CLI, the HTTP service, the demo
and users reach the store only through its methods.

    import tracewh
    wh = tracewh.open("runs/wh")                  # $TRACEWH_HOME/warehouse when no path is given
    wh.ingest(["run.zip"], attrs={"model": "gpt-5.4"})
    wh.query("select * from runs", limit=100).table   # guarded, capped, timed: as `tracewh sql` and POST /sql
    wh.sql("select kind, count(*) from events group by kind").pl()   # the raw DuckDB relation

This module orchestrates and holds no logic of its own: ingest (ingest/) writes through the
store (warehouse/, which knows nothing of ingest or queries); queries run on the engine
(queries/engine.py, the one place limits apply) over the store's committed files;
analytics/ turns query results into statistics, tables and figures.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import NotFoundError, UsageError
from .paths import default_warehouse
from .queries.engine import QueryEngine, QueryResult
from .warehouse.store import Batch, Store

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from .analytics.paper_export import TableOptions
    from .ingest.capture.recorder import Recorder
    from .ingest.pipeline import IngestReport, Listener
    from .ingest.prices import PriceRegistry
    from .ingest.quality.gate import Report
    from .ingest.sources import Limits

__all__ = ["CheckResult", "QueryResult", "ViewInfo", "Warehouse", "open", "record"]


@dataclass(frozen=True)
class ViewInfo:
    name: str
    description: str
    columns: list[tuple[str, str]]  # (name, DuckDB type)
    group: str = "core"  # core, or the benchmark whose folder holds the view


@dataclass
class CheckResult:
    """`tracewh check`: committed files that cannot be read back, and the quality suites' report
    (not run while files are unreadable)."""

    unreadable: list[tuple[str, str]]
    report: Report | None

    @property
    def passed(self) -> bool:
        return not self.unreadable and self.report is not None and not self.report.failed

    def to_dict(self) -> dict[str, Any]:
        result = self.report.to_dict() if self.report else {"passed": False}
        return result | {"unreadable_files": [{"file": f, "error": e} for f, e in self.unreadable]}


class Warehouse:
    """A tracewh store. `version` pins it as of a commit (time travel); `sandbox` limits queries
    to the store's own relations and files (what the HTTP service serves)."""

    def __init__(self, path: str | Path | None = None, version: int | None = None, *, sandbox: bool = False):
        self.store = Store(path if path is not None else default_warehouse())
        self.path = self.store.root  # absolute, resolved once
        self.pinned = version
        self.sandbox = sandbox
        self._engine: QueryEngine | None = None

    def __repr__(self) -> str:
        return f"Warehouse({str(self.path)!r}, version={self.version})"

    @property
    def version(self) -> int | None:
        return self.pinned if self.pinned is not None else self.store.version()

    def as_of(self, version: int) -> Warehouse:
        return Warehouse(self.path, version, sandbox=self.sandbox)

    # -- reading ---------------------------------------------------------------

    @property
    def engine(self) -> QueryEngine:
        if self._engine is None:
            self._engine = QueryEngine(self.store.files(self.pinned),
                                       sandbox=self.store.table_path if self.sandbox else None)
        return self._engine

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection (for registering your own data beside the store's); views appear
        as `sql()` and `query()` need them."""
        return self.engine.con

    def sql(self, query: str, params: list | dict | None = None) -> duckdb.DuckDBPyRelation:
        """The raw DuckDB relation: `.pl()` for Polars, `.arrow()` for Arrow, `.fetchall()` for tuples.
        No guard and no limits: your own Python process, your own query."""
        return self.engine.relation(query, params)

    def query(self, text: str, *, dialect: str = "duckdb", as_of: int | None = None, limit: int | None = None,
              timeout_s: float | None = None) -> QueryResult:
        """A read-only query, as every door runs it: checked by the guard, transpiled from
        `dialect`, views created as needed, at most `limit` rows, stopped after `timeout_s`."""
        from .queries.guard import prepare_query

        prepared = prepare_query(text, dialect, service=self.sandbox)
        if as_of is not None and as_of != self.pinned:
            with self._pinned(as_of) as then:
                return then.query(text, dialect=dialect, limit=limit, timeout_s=timeout_s)
        return self.engine.execute(prepared.sql, limit=limit, timeout_s=timeout_s, tables=prepared.tables)

    def views(self) -> list[ViewInfo]:
        """Every view's description and columns, bound on a scratch engine (nothing is computed,
        not even the building blocks a query connection materializes)."""
        from .queries.engine import ViewCreator
        from .queries.registry import load_views

        scratch = QueryEngine(self.store.files(self.pinned))
        try:
            ViewCreator(scratch.con, materialize=False).for_query(_every_view())
            bound = {v.name: scratch.con.sql(f"from {v.name}") for v in load_views()}  # bound, never run
            return [ViewInfo(v.name, v.description, list(zip(bound[v.name].columns, map(str, bound[v.name].types))),
                             v.group) for v in load_views()]
        finally:
            scratch.close()

    def view(self, name: str, filters: dict[str, str] | None = None, *, limit: int | None = 100, offset: int = 0,
             timeout_s: float | None = None) -> QueryResult:
        """Rows of one view, filtered by column = value (bound, never spliced), in a stable order."""
        from .queries.registry import load_views

        if name not in {v.name for v in load_views()}:
            raise NotFoundError(f"no view named {name!r}; `tracewh views` (GET /views) lists them")
        filters = filters or {}
        columns = self.engine.relation(f"select * from {name} limit 0").columns
        if unknown := sorted(set(filters) - set(columns)):
            raise UsageError(f"unknown filter column(s) {unknown}; {name} has {columns}")
        where = " and ".join(f'CAST("{c}" AS VARCHAR) = ${i}' for i, c in enumerate(filters, start=1))
        query = (f"select * from {name}" + (f" where {where}" if where else "")  # order by all: stable pages
                 + f" order by all limit ${len(filters) + 1} offset ${len(filters) + 2}")
        return self.engine.execute(query, [*filters.values(), _one_more(limit), offset], limit=limit,
                                   timeout_s=timeout_s)

    def runs(self, *, limit: int | None = 100, offset: int = 0, timeout_s: float | None = None) -> QueryResult:
        return self.engine.execute("select * from runs order by run_id limit $1 offset $2", [_one_more(limit), offset],
                                   limit=limit, timeout_s=timeout_s)

    def run(self, run_id: str, *, timeout_s: float | None = None) -> dict[str, Any]:
        rows = self.engine.execute("select * from runs where run_id = $1", [run_id], timeout_s=timeout_s).table
        if not rows.num_rows:
            raise NotFoundError(f"no run {run_id!r}")
        return rows.to_pylist()[0]

    def trace(self, run_id: str, task_id: str, *, limit: int | None = None,
              timeout_s: float | None = None) -> list[dict[str, Any]]:
        """A task's events as a span tree: delegations hold the calls made for them."""
        from .analytics.traces import span_tree

        events = self.engine.execute("select * from events where run_id = $1 and task_id = $2 order by seq",
                                     [run_id, task_id], limit=limit, timeout_s=timeout_s).table
        if not events.num_rows:
            raise NotFoundError(f"no events for task {task_id!r} of run {run_id!r}")
        return span_tree(events.to_pylist())

    def log(self) -> list[Batch]:
        """Committed batches, oldest first."""
        return self.store.batches()

    def check(self) -> CheckResult:
        """Read back every committed file, then run the quality suites over every stored event."""
        from .ingest.quality.gate import check_events

        unreadable = self.store.unreadable_files(self.pinned)
        return CheckResult(unreadable, None if unreadable else check_events(self.con))

    def quarantine(self) -> pa.Table:
        """Every event the quality gate held back (`ingest --quarantine`), with its reasons."""
        from .warehouse.quarantine import Quarantine

        return Quarantine(self.path).table()

    # -- writing ---------------------------------------------------------------

    def ingest(self, paths: Iterable[str | Path], attrs: dict[str, str] | None = None, check: bool = True,
               progress: Listener | None = None, *, quarantine: bool = False, limits: Limits | None = None,
               prices: PriceRegistry | None = None) -> IngestReport:
        """Ingest archives, folders and files; each commits atomically, a repeat adds nothing."""
        from .ingest.pipeline import ingest
        from .ingest.sources import Limits

        if self.pinned is not None:
            raise UsageError("this Warehouse is pinned to a past version; open the latest to ingest")
        report = ingest(self.store, [Path(p) for p in paths], attrs, limits=limits or Limits(), listener=progress,
                        prices=prices, check=check, quarantine=quarantine)
        self.close()  # the next query sees the new commit
        return report

    def doctor(self) -> dict[str, list[str]]:
        """Remove what interrupted writers left behind; returns what was removed, by kind."""
        return self.store.doctor()

    # -- out: tables, events, figures, statistics --------------------------------

    def export(self, target: str | None = None, *, query: str | None = None, fmt: str = "csv",
               options: TableOptions | None = None, out: Path | None = None, where: str | None = None,
               dialect: str = "duckdb") -> bytes:
        """A view (or a read-only query) as a table for a paper, with its provenance."""
        from .analytics.paper_export import FORMATS, TableOptions, export, export_query
        from .queries.guard import prepare_query

        if (target is None) == (query is None):
            raise UsageError("give a view name or a query (one of them)")
        if fmt not in FORMATS:
            raise UsageError(f"format {fmt!r}: choose one of {', '.join(FORMATS)}")
        if fmt == "parquet" and out is None:
            raise UsageError("parquet needs an output file (--out FILE)")
        # Exports keep the query as written (their provenance must re-run it): the checked text,
        # one read-only statement to DuckDB's own parser, runs unchanged.
        text = prepare_query(query if query is not None else export_query(target), dialect, service=self.sandbox).text
        if where:
            text = prepare_query(f"select * from ({text}) where {where}", service=self.sandbox).text
        return export(self, text, fmt, options or TableOptions(), out)

    def export_events(self, out: Path | str, run_ids: list[str] | None = None) -> int:
        """Events in the native tracewh-events/1 format ('-' = stdout), ordered by run and seq."""
        from .analytics.event_export import EXPORT_QUERY, write_native
        from .schema import COLUMN_NAMES

        reader = self.engine.reader(EXPORT_QUERY.format(columns=", ".join(COLUMN_NAMES)), [run_ids])
        return write_native(reader, None if str(out) == "-" else Path(out), self.version)

    def plot(self, kind: str, out: Path, where: str | None = None) -> Path:
        """A figure from a view (rs-curves, critical-curves, pareto, vendor-flow, role-accuracy)."""
        from .analytics.plots import plot
        from .queries.guard import prepare_query

        if out.suffix.lower() not in (".png", ".pdf", ".svg"):
            raise UsageError("the figure file must end in .png, .pdf or .svg")
        if where:
            prepare_query(f"select 1 where {where}", service=self.sandbox)
        return plot(self, kind, out, where)

    def paired_delta(self, baseline: str = "blind", n_boot: int = 5000, seed: int = 0) -> duckdb.DuckDBPyRelation:
        """DecisionBench Δq per model x suite x condition vs `baseline`, paired bootstrap CIs."""
        from .analytics.decisionbench_stats import paired_delta

        return paired_delta(self, baseline, n_boot, seed)

    def hypervolume(self, baseline: str = "blind", n_boot: int = 5000, seed: int = 0) -> duckdb.DuckDBPyRelation:
        """DecisionBench Pareto hypervolume per suite x condition, ΔHV vs `baseline`."""
        from .analytics.decisionbench_stats import pareto_hypervolume

        return pareto_hypervolume(self, baseline, n_boot, seed)

    def cards(self, out: Path, variant: str = "c2") -> list[Path]:
        """DecisionBench profile cards from Stage-1 events, one Markdown file per model."""
        from .analytics.profile_cards import write_cards

        return write_cards(self, out, variant)

    def view_script(self, dialect: str = "duckdb", location: str | None = None) -> str:
        """Every view as `dialect` SQL after a definition of `events_raw` over this store's files."""
        from .queries.dialects import view_script
        from .version import __version__

        return view_script(dialect, location or str(self.store.table_path), __version__)

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    @contextmanager
    def _pinned(self, version: int) -> Iterator[Warehouse]:
        then = self.as_of(version)
        try:
            yield then
        finally:
            then.close()


def _one_more(limit: int | None) -> int | None:
    """SQL LIMIT for a capped page: one row past the cap tells the engine it was cut."""
    return None if limit is None else limit + 1


def _every_view() -> str:
    from .queries.registry import load_views

    return " ".join(f"select * from {v.name};" for v in load_views())


def open(path: str | Path | None = None, version: int | None = None) -> Warehouse:  # noqa: A001
    """Open the warehouse at `path` (default: $TRACEWH_HOME/warehouse), optionally as of a version."""
    return Warehouse(path, version)


@contextmanager
def record(run_id: str, benchmark: str = "custom", attrs: dict[str, Any] | None = None, *,
           spool: str | Path | None = None, warehouse: str | Path | None = None,
           capture_content: bool = False, fsync: bool = False) -> Iterator[Recorder]:
    """Record a harness's LLM calls, tools, delegations and scores (ingest/capture/); with
    `warehouse`, the run is ingested into that store when the block ends."""
    from .ingest.capture.recorder import record as capture

    recorder = None
    try:
        with capture(run_id, benchmark, attrs, spool=spool, capture_content=capture_content, fsync=fsync) as recorder:
            yield recorder
    finally:  # the recording is closed by now, also when the block raised
        if warehouse is not None and recorder is not None:
            recorder.safely("ingest into the warehouse", Warehouse(warehouse).ingest, [recorder.spool.folder])
