"""The one way in: `tracewh.open()` returns a Warehouse, and the CLI, the HTTP service, the demo
and users reach the store only through its methods.

    import tracewh
    wh = tracewh.open("runs/wh")                  # $TRACEWH_HOME/warehouse when no path is given
    wh.ingest(["run.zip"], attrs={"model": "gpt-5.4"})   # the first ingest creates the store
    wh.query("select * from runs", limit=100).pl()    # guarded, capped, timed: as `tracewh sql` and POST /sql
    wh.sql("select kind, count(*) from events group by kind").pl()   # the raw DuckDB relation

Opening is lazy and never fails for a missing store, so `open(path).ingest(...)` starts one;
every read of a path that holds no store raises NotFoundError naming the path (and a store
nearby with a similar name), instead of answering from empty tables. The HTTP service is the
exception: started on a store that is to be ingested into, it answers empty until then.

This module orchestrates and holds no logic of its own: ingest (ingest/) writes through the
store (warehouse/, which knows nothing of ingest or queries); queries run on the engine
(queries/engine.py, the one place limits apply) over the store's committed files;
analytics/ turns query results into statistics, tables and figures.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import NotFoundError, UsageError
from .paths import default_home, default_warehouse
from .queries.engine import Limits, QueryEngine, QueryResult
from .warehouse.layout import holds_store, latest_version, missing_store, resolve_root

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from .analytics.compare import Comparison
    from .analytics.otlp_export import OtlpExport
    from .analytics.release import Release
    from .analytics.paper_export import TableOptions
    from .ingest.capture.recorder import Recorder
    from .ingest.judging.judge import JudgeListener, JudgeSummary
    from .ingest.judging.labels import LabelInput, LabelReport
    from .ingest.judging.queue import QueueReport
    from .ingest.pipeline import IngestReport, Listener
    from .ingest.prices import PriceRegistry
    from .ingest.quality.gate import Report
    from .ingest.sources import Limits as InputLimits
    from .queries.isolation import QueryWorkers
    from .warehouse.store import Batch, Store

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
    to the store's own relations and files (what the HTTP service serves).

    Reading a path that holds no store raises NotFoundError (not in the sandbox: the service
    checks at start, and serves a store it will ingest into as empty); `ingest` creates one."""

    def __init__(self, path: str | Path | None = None, version: int | None = None, *, sandbox: bool = False,
                 memory_limit: str | None = None, isolation: QueryWorkers | None = None):
        self.path = resolve_root(path if path is not None else default_warehouse())  # absolute, resolved once
        self.pinned = version
        self.sandbox = sandbox
        self.memory_limit = memory_limit  # per query connection, e.g. "512MB" (the service sets one)
        self.isolation = isolation  # queries run in these worker processes (the service's; queries/isolation.py)
        self._engine: QueryEngine | None = None
        self._engine_version: int | None = None
        self._store: Store | None = None

    def __repr__(self) -> str:
        return f"Warehouse({str(self.path)!r}, version={self.version})"

    @property
    def version(self) -> int | None:
        return self.pinned if self.pinned is not None else latest_version(self.path / "events")

    def as_of(self, version: int) -> Warehouse:
        return Warehouse(self.path, version, sandbox=self.sandbox, memory_limit=self.memory_limit,
                         isolation=self.isolation)

    @property
    def store(self) -> Store:
        """The storage layer (loaded on first use: the Delta library costs import time a query need not pay)."""
        if self._store is None:
            from .warehouse.store import Store

            self._store = Store(self.path)
        return self._store

    # -- reading ---------------------------------------------------------------

    @property
    def engine(self) -> QueryEngine:
        """The query engine over this version, its views from the version's compiled catalog.

        An unpinned Warehouse follows the store: once another process commits, the next query
        opens the new version (a Warehouse held for hours, as the service and notebooks hold
        them, would otherwise answer from the version it first saw)."""
        version = self.version
        if self._engine is not None and version != self._engine_version:
            self._engine.close()
            self._engine = None
        if self._engine is None:
            if not self.sandbox:
                self.require_store()
            self._engine, self._engine_version = self._open_engine(version), version
        return self._engine

    def exists(self) -> bool:
        """Whether a store is at `path` (an ingest has committed to it)."""
        return holds_store(self.path)

    def require_store(self) -> None:
        """NotFoundError, naming the path and a store nearby, unless a store is at `path`."""
        if not self.exists():
            default = self.path == resolve_root(default_warehouse())  # no -w given: the demo store is the likely one
            raise NotFoundError(missing_store(self.path, default_home() / "demo" / "warehouse" if default else None))

    def _open_engine(self, version: int | None) -> QueryEngine:
        options = {"sandbox": self.path / "events" if self.sandbox else None, "memory_limit": self.memory_limit,
                   "isolation": self.isolation}
        if version is None:
            return QueryEngine([], **options)
        catalog = self._catalog(version)
        # None: read-only media, a path DuckDB cannot open: views made in memory instead
        return QueryEngine(catalog=catalog, **options) if catalog else QueryEngine(self.store.files(version), **options)

    def _catalog(self, version: int) -> Path | None:
        """The compiled view catalog of `version`, built first if missing; None where none can be kept."""
        from .queries.catalog import CatalogUnavailable, ensure_catalog
        from .warehouse.permissions import store_umask

        try:
            with store_umask(self.path):
                return ensure_catalog(self.path, version, lambda: self.store.files(version))
        except CatalogUnavailable:
            return None

    def prepare(self) -> None:
        """Build this version's view catalog now, if it is not built, so that the next query
        does not wait for it (the service does this after each commit it makes). No engine is
        opened: a committer building catalogs one after another does not pay for one each time."""
        version = self.version
        if version is not None:
            if not self.sandbox:
                self.require_store()
            self._catalog(version)

    def readable_version(self, version: int, *, built_soon: bool = False) -> int:
        """The version to read for `version` without waiting on a catalog build another is making
        now (or, `built_soon`, will make in a moment): `version`, or while its catalog is being
        built the newest version whose catalog is (queries/catalog.py)."""
        from .queries.catalog import readable_version

        return readable_version(self.path, version, built_soon)

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection (for registering your own data beside the store's); views appear
        as `sql()` and `query()` need them. A commit by anyone moves an unpinned Warehouse to a
        new connection: to keep registrations, query a pinned one (`as_of(wh.version)`)."""
        return self.engine.con

    def sql(self, query: str, params: list | dict | None = None) -> duckdb.DuckDBPyRelation:
        """The raw DuckDB relation: `.pl()` for Polars, `.arrow()` for Arrow, `.fetchall()` for tuples.
        No guard and no limits: your own Python process, your own query."""
        return self.engine.relation(query, params)

    def query(self, text: str, *, dialect: str = "duckdb", as_of: int | None = None, limit: int | None = None,
              timeout_s: float | None = None, max_bytes: int | None = None, arrow: bool = True) -> QueryResult:
        """A read-only query, as every door runs it: checked by the guard, transpiled from
        `dialect`, at most `limit` rows and `max_bytes` bytes, stopped after `timeout_s`. The
        QueryResult reads like a DuckDB relation: `.arrow()`, `.pl()`, `.df()`, `.fetchall()`,
        plus `.truncated`. `arrow=False` fetches Python tuples first (what a terminal needs)."""
        from .queries.guard import prepare_query, prepare_query_again

        if as_of is not None and as_of != self.pinned:
            with self._pinned(as_of) as then:
                return then.query(text, dialect=dialect, limit=limit, timeout_s=timeout_s, max_bytes=max_bytes,
                                  arrow=arrow)
        from .queries.parse import parsing_with

        if self.engine.isolation is None:
            with parsing_with(self.engine.con):
                prepared = prepare_query(text, dialect, service=self.sandbox)
        else:  # the query runs in a worker: parsed on this thread's own parser, no connection to the version opened
            prepared = prepare_query_again(text, dialect, service=self.sandbox)
        return self.engine.execute(prepared.sql, None, Limits(limit, timeout_s, max_bytes, arrow, prepared.tables))

    def views(self) -> list[ViewInfo]:
        """Every view's description and columns (bound, never run)."""
        from .queries.registry import view_headers

        columns = self.engine.view_columns()
        return [ViewInfo(v.name, v.description, columns[v.name], v.group) for v in view_headers()]

    def view(self, name: str, filters: dict[str, str] | None = None, *, limit: int | None = 100, offset: int = 0,
             timeout_s: float | None = None, max_bytes: int | None = None) -> QueryResult:
        """Rows of one view, filtered by column = value (bound, never spliced), in a stable order."""
        from .queries.registry import view_names

        if name not in view_names():
            raise NotFoundError(f"no view named {name!r}; `tracewh views` (GET /views) lists them")
        filters = filters or {}
        columns = self.engine.relation(f"select * from {name} limit 0").columns
        if unknown := sorted(set(filters) - set(columns)):
            raise UsageError(f"unknown filter column(s) {unknown}; {name} has {columns}")
        where = " and ".join(f'CAST("{c}" AS VARCHAR) = ${i}' for i, c in enumerate(filters, start=1))
        query = (f"select * from {name}" + (f" where {where}" if where else "")  # order by all: stable pages
                 + f" order by all limit ${len(filters) + 1} offset ${len(filters) + 2}")
        return self.engine.execute(query, [*filters.values(), _one_more(limit), offset],
                                   Limits(limit, timeout_s, max_bytes, tables=[name]))

    def runs(self, filters: dict[str, str] | None = None, *, attrs: dict[str, str] | None = None,
             order_by: str = "run_id", descending: bool = False, limit: int | None = 100, offset: int = 0,
             timeout_s: float | None = None) -> QueryResult:
        """Runs with their totals and headline score, filtered by column = value and attribute =
        value (bound, never spliced), ordered by one of their columns (checked by name), then run_id."""
        filters, attrs = filters or {}, attrs or {}
        columns = self.engine.relation("select * from runs limit 0").columns
        if unknown := sorted({*filters, order_by} - set(columns)):
            raise UsageError(f"unknown column(s) {unknown}; runs has {columns}")
        where, params = _run_conditions(filters, attrs)
        query = (f"select * from runs{where} order by \"{order_by}\" {'desc' if descending else 'asc'} nulls last, "
                 f"run_id limit ${len(params) + 1} offset ${len(params) + 2}")
        return self.engine.execute(query, [*params, _one_more(limit), offset], Limits(limit, timeout_s, tables=["runs"]))

    def tasks(self, run_id: str, *, limit: int | None = 100, offset: int = 0,
              timeout_s: float | None = None) -> QueryResult:
        """A run's tasks in the order they began: totals, time span and final score (view `tasks`)."""
        return self.engine.execute("select * from tasks where run_id = $1 order by first_seq, task_id limit $2 offset $3",
                                   [run_id, _one_more(limit), offset], Limits(limit, timeout_s, tables=["tasks"]))

    def run(self, run_id: str, *, timeout_s: float | None = None) -> dict[str, Any]:
        rows = self.engine.execute("select * from runs where run_id = $1", [run_id],
                                   Limits(seconds=timeout_s, tables=["runs"])).arrow()
        if not rows.num_rows:
            raise NotFoundError(f"no run {run_id!r}")
        return rows.to_pylist()[0]

    def trace(self, run_id: str, task_id: str, *, limit: int | None = None,
              timeout_s: float | None = None) -> list[dict[str, Any]]:
        """A task's events as a span tree: delegations hold the calls made for them."""
        from .analytics.traces import SPAN_FIELDS, span_tree

        columns = ", ".join((*SPAN_FIELDS, "payload"))  # what span_tree reads: half the columns, half the conversion
        events = self.engine.execute(f"select {columns} from events where run_id = $1 and task_id = $2 order by seq",
                                     [run_id, task_id], Limits(limit, timeout_s, tables=["events"])).arrow()
        if not events.num_rows:
            raise NotFoundError(f"no events for task {task_id!r} of run {run_id!r}")
        return span_tree(events.to_pylist())

    def event(self, run_id: str, event_id: str, *, timeout_s: float | None = None) -> dict[str, Any]:
        """One event of a run, every column (the payload as JSON text)."""
        rows = self.engine.execute("select * from events where run_id = $1 and event_id = $2", [run_id, event_id],
                                   Limits(seconds=timeout_s, tables=["events"])).arrow()
        if not rows.num_rows:
            raise NotFoundError(f"no event {event_id!r} in run {run_id!r}")
        return rows.to_pylist()[0]

    def log(self, *, maintenance: bool = False) -> list[Batch]:
        """Committed batches, oldest first; with `maintenance`, also the commits that add no
        batch (`optimize`), as entries whose `operation` says what they did."""
        self.require_store()
        return self.store.log() if maintenance else self.store.batches()

    def check(self) -> CheckResult:
        """Read back every committed file, then run the quality suites over every stored event."""
        from .ingest.quality.gate import check_events

        self.require_store()
        unreadable = self.store.unreadable_files(self.pinned)
        return CheckResult(unreadable, None if unreadable else check_events(self.con))

    def quarantine(self) -> pa.Table:
        """Every event the quality gate held back (`ingest --quarantine`), with its reasons."""
        from .warehouse.quarantine import Quarantine

        if not self.path.is_dir():  # an ingest that held every event may have committed none
            self.require_store()
        return Quarantine(self.path).table()

    # -- writing ---------------------------------------------------------------

    def ingest(self, paths: Iterable[str | Path], attrs: dict[str, str] | None = None, check: bool = True,
               progress: Listener | None = None, *, quarantine: bool = False, limits: InputLimits | None = None,
               prices: PriceRegistry | None = None, workers: int | None = None) -> IngestReport:
        """Ingest archives, folders and files; each commits atomically, a repeat adds nothing.

        `workers`: processes that read sources in parallel; by default one per core once the
        ingest has read 1 MB and has several groups or sources to share (Linux); 1 reads everything
        in this process. The result is the same."""
        from .ingest.pipeline import ingest
        from .ingest.sources import Limits as InputLimits

        if self.pinned is not None:
            raise UsageError("this Warehouse is pinned to a past version; open the latest to ingest")
        report = ingest(self.store, [Path(p) for p in paths], attrs, limits=limits or InputLimits(), listener=progress,
                        prices=prices, check=check, quarantine=quarantine, workers=workers)
        self.close()  # the next query sees the new commit
        return report

    def doctor(self) -> dict[str, list[str]]:
        """Remove what interrupted writers left behind; returns what was removed, by kind."""
        if not self.path.is_dir():  # an interrupted first ingest leaves a folder, and no commit, to clean
            self.require_store()
        return self.store.doctor()

    def ingest_otlp(self, requests: Sequence[bytes], *, prices: PriceRegistry | None = None,
                    encoding: str = "protobuf", quarantine: bool = False) -> IngestReport:
        """OTLP ExportTraceServiceRequests as one atomic batch, through the OTLP adapter, the gate and
        the commit: what the OTLP/HTTP receiver commits for each group of requests. `encoding`:
        `protobuf` (serialized requests) or `json` (OTLP/JSON requests, one line each), as they were
        sent, which `tracewh log` shows (otlp-proto, otlp-json). Spans already stored add nothing
        (event ids derive from trace and span ids). `quarantine`: hold the events the gate fails
        instead of refusing the batch, as `ingest --quarantine` does."""
        from .ingest.adapters.otel.records import frame, json_lines_of
        from .ingest.pipeline import ingest_memory

        if self.pinned is not None:
            raise UsageError("this Warehouse is pinned to a past version; open the latest to ingest")
        if encoding not in ("protobuf", "json"):
            raise UsageError(f"OTLP encoding {encoding!r}: protobuf or json")
        name, data = (("otlp-http.jsonl", json_lines_of(requests)) if encoding == "json"
                      else ("otlp-http.binpb", frame(requests)))
        report = ingest_memory(self.store, "POST /v1/traces", name, data, prices=prices, quarantine=quarantine)
        self.close()  # the next query sees the new commit
        return report

    @contextmanager
    def batches_on_one_instance(self) -> Iterator[None]:
        """Within the block, this process's ingests share one DuckDB instance for their batches'
        checks and commits, spilling into a staging folder held until the block ends: for a
        process that commits a small batch a second for its life (the service's commit process),
        where starting and closing an instance per batch cost 7-9% of each commit."""
        from .warehouse import batchdb

        with self.store.staging() as spill, batchdb.one_instance(spill):
            yield

    def optimize(self, *, when_over: int | None = None, target_bytes: int | None = None) -> dict[str, int | None] | None:
        """Compact small data files (as many small commits leave them) into few large ones, in one
        commit. Query results do not change, and nothing is vacuumed: every past version still reads.
        `target_bytes`: the size files are merged up to (default 16 MB); larger files are left as
        they are. `when_over`: only when some partition holds more than that many files smaller
        than that (else None), as the service compacts in the background."""
        from .warehouse.datafiles import TARGET_FILE_BYTES

        if self.pinned is not None:
            raise UsageError("this Warehouse is pinned to a past version; open the latest to optimize")
        target = target_bytes or TARGET_FILE_BYTES
        if when_over is not None and not self.needs_optimize(when_over, target):
            return None
        result = self.store.optimize(target)
        self.close()
        return result

    def needs_optimize(self, when_over: int, target_bytes: int | None = None) -> bool:
        """Whether some partition holds more than `when_over` data files smaller than `target_bytes`
        (default 16 MB): what `optimize(when_over=...)` asks before it compacts, read from the
        Delta log alone."""
        from .warehouse.datafiles import TARGET_FILE_BYTES

        target = target_bytes or TARGET_FILE_BYTES
        per_partition = Counter(str(p.parent) for p, size in self.store.file_sizes().items() if size < target)
        return bool(per_partition) and max(per_partition.values()) > when_over

    def judge(self, rubric: str | Path, *, concurrency: int = 4, budget_usd: float | None = None,
              limit: int | None = None, sample: int | None = None, seed: int = 0,
              progress: JudgeListener | None = None, prices: PriceRegistry | None = None) -> JudgeSummary:
        """Ask the rubric's LLM judges about its targets and commit each answer as a `judgment`
        event (docs/judging.md). Answers already stored are never asked for again; a crashed
        run's spooled answers are committed first. `budget_usd` stops before the spend would
        pass it; `sample` draws that many targets at random (`seed`), `limit` takes the first."""
        from .ingest.judging.judge import judge

        if self.pinned is not None:
            raise UsageError("this Warehouse is pinned to a past version; open the latest to judge")
        return judge(self, rubric, concurrency=concurrency, budget_usd=budget_usd, limit=limit, sample=sample,
                     seed=seed, listener=progress, prices=prices)

    def label(self, labels: Sequence[LabelInput | dict[str, Any]], *,
              rubric_file: str | Path | None = None) -> LabelReport:
        """Record people's labels (dicts or `LabelInput`s: rubric, target_id, annotator, label or
        score, note) as `judgment` events; a later label by the same annotator supersedes the
        earlier, the same label again writes nothing. All are checked before any is committed."""
        from .ingest.judging.labels import record_labels

        if self.pinned is not None:
            raise UsageError("this Warehouse is pinned to a past version; open the latest to label")
        return record_labels(self, list(labels), rubric_file)

    def label_events(self, labels: Sequence[LabelInput | dict[str, Any]], *,
                     pending: dict[tuple[str, str, str], dict[str, Any]] | None = None) -> tuple[LabelReport, list[dict]]:
        """Check labels as `label` does and give the events that would record them, committing
        nothing (the service spools them: service/label_spool.py). `pending`: labels accepted and
        not yet committed, by (rubric, target_id, annotator), which count as current."""
        from .ingest.judging.labels import label_events

        return label_events(self, list(labels), pending=pending)

    def commit_label_lines(self, lines: bytes) -> None:
        """Commit label events given as native JSON lines (from `label_events`), as one batch;
        events already stored add nothing."""
        from .ingest.judging.labels import commit_label_lines

        commit_label_lines(self, lines)

    def queue_add(self, rubric: str | Path, *, reviews: int = 1) -> QueueReport:
        """Put the rubric's targets (its `targets` query) in its review queue, each wanting
        `reviews` labels by distinct annotators; a target already queued so is left alone."""
        from .ingest.judging.queue import add_to_queue

        if self.pinned is not None:
            raise UsageError("this Warehouse is pinned to a past version; open the latest to queue")
        return add_to_queue(self, rubric, reviews)

    def next_item(self, rubric: str, annotator: str, *, skipped: Sequence[str] = ()) -> dict[str, Any] | None:
        """The rubric's next queue item for this annotator (a `review_queue` row): not done, not
        labelled by them, not in `skipped`, in the queue's order; None when none is left."""
        from .ingest.judging.queue import next_item

        return next_item(self, rubric, annotator, list(skipped))

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
        if query is not None:
            text = prepare_query(query, dialect, service=self.sandbox).text
            if where:
                text = prepare_query(f"select * from ({text}) where {where}", service=self.sandbox).text
        else:
            text = prepare_query(export_query(target, where), dialect, service=self.sandbox).text
        return export(self, text, fmt, options or TableOptions(), out)

    def export_events(self, out: Path | str, run_ids: list[str] | None = None) -> int:
        """Events in the native tracewh-events/1 format ('-' = stdout), ordered by run and seq."""
        from .analytics.event_export import EXPORT_QUERY, write_native
        from .schema import COLUMN_NAMES

        reader = self.engine.reader(EXPORT_QUERY.format(columns=", ".join(COLUMN_NAMES)), [run_ids])
        return write_native(reader, None if str(out) == "-" else Path(out), self.version)

    def export_labels(self, out: Path | str, rubric: str) -> int:
        """A rubric's labelled targets with every rater's current label and the label history, as
        an eval set (.jsonl or .parquet); returns how many targets."""
        from .ingest.judging.export import export_labels

        return export_labels(self, out, rubric)

    def export_otlp(self, out: Path | str | None = None, *, run_ids: list[str] | None = None,
                    benchmarks: list[str] | None = None, models: list[str] | None = None,
                    endpoint: str | None = None, headers: dict[str, str] | None = None) -> OtlpExport:
        """Runs as OpenTelemetry traces: OTLP/JSON lines to `out` ('-' = stdout) and/or POSTed to an
        OTLP/HTTP `endpoint` (with `headers`). Filters: runs, benchmarks, and runs with an event of
        one of `models`; none = every run."""
        from .analytics.otlp_export import EXPORT_QUERY, export_otlp

        if out is None and endpoint is None:
            raise UsageError("give an output file ('-' for stdout) or an OTLP/HTTP endpoint, or both")
        reader = self.engine.reader(EXPORT_QUERY, [run_ids or None, benchmarks or None, models or None])
        return export_otlp(reader, None if out is None else Path(out), endpoint=endpoint, headers=headers)

    def plot(self, kind: str, out: Path, where: str | None = None) -> Path:
        """A figure from a view (rs-curves, critical-curves, pareto, vendor-flow, role-accuracy)."""
        from .analytics.plots import plot
        from .queries.guard import prepare_query

        if out.suffix.lower() not in (".png", ".pdf", ".svg"):
            raise UsageError("the figure file must end in .png, .pdf or .svg")
        if where:
            prepare_query(f"select 1 where {where}", service=self.sandbox)
        return plot(self, kind, out, where)

    def compare(self, target: str, *, by: str, a: str, b: str, match: Sequence[str] = ("task_id",),
                where: str | None = None, n_boot: int = 5000, seed: int = 0, rng_key: Sequence[str] = (),
                plot: Path | None = None, timeout_s: float | None = None) -> Comparison:
        """`target` = VIEW.COLUMN, a numeric column, between the rows where `by` = `a` and those where
        `by` = `b`, paired on `match` (docs/compare.md): means, mean difference b - a with a paired
        bootstrap CI, win/tie/loss, sign test (McNemar for 0/1), unmatched and most-changed items.
        `rng_key` names the random stream as `stats delta` does, (model, suite): the same CI.
        `timeout_s` stops its queries (not the bootstrap) after that long, as the web page asks."""
        from .analytics.compare import Question, compare, plot_pairs
        from .queries.guard import prepare_query
        from .queries.registry import view_names

        view, dot, column = target.partition(".")
        if not dot or not view or not column:
            raise UsageError(f"{target!r}: give VIEW.COLUMN, e.g. dcb_tasks.quality")
        if view not in view_names():
            raise NotFoundError(f"no view named {view!r}; `tracewh views` (GET /views) lists them")
        if plot is not None and plot.suffix.lower() not in (".png", ".pdf", ".svg"):
            raise UsageError("the figure file must end in .png, .pdf or .svg")
        if not match:
            raise UsageError("--match needs at least one column (default task_id)")
        # The filter runs as DuckDB regenerated it from its own parse, never spliced as typed.
        source = prepare_query(f"select * from {view}" + (f" where {where}" if where else ""), service=self.sandbox).sql
        with self.engine.time_limit(timeout_s):  # also: a filter failing as it runs is a QueryError, not a crash
            result = compare(self, source, Question(view, column, by, a, b, tuple(match), n_boot, seed, tuple(rng_key)))
        if plot is not None:
            plot_pairs(result, plot)
        return result

    def release(self, out: str | Path, *, runs: Sequence[str] = (), where: str | None = None,
                views: Sequence[str] = (), no_content: bool = False, allow: Sequence[str] = (),
                license: str = "other", title: str | None = None, description: str | None = None,  # noqa: A002
                citation: str | None = None, shard_rows: int | None = None, overwrite: bool = False) -> Release:
        """Write runs as a dataset folder to publish (docs/release.md): Parquet shards of their events
        under `events/` (and of `views` under `views/<name>/`), a dataset card (README.md) and
        Croissant metadata. Default: every run; `runs` and/or `where` (a filter over `runs`) choose.
        `no_content` drops message text, tool arguments and results; a secret scan of what would be
        written refuses the release (SecretsFound, nothing written) unless `allow` names each value.
        `tracewh ingest` reads the folder back with the same event ids."""
        from .analytics.release import ReleaseRequest, release
        from .analytics.release.shards import SHARD_ROWS

        self.require_store()
        request = ReleaseRequest(tuple(runs), where, tuple(views), no_content, tuple(allow), license, title, description,
                                 citation, SHARD_ROWS if shard_rows is None else shard_rows)
        return release(self, self.path, Path(out), request, overwrite=overwrite)

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

        return view_script(dialect, location or str(self.path / "events"), __version__)

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


def _run_conditions(filters: dict[str, str], attrs: dict[str, str]) -> tuple[str, list[str]]:
    """A WHERE clause for `runs` and its parameters: column names were checked by the caller;
    values and attribute keys are bound (a key is matched exactly, never read as a JSON path)."""
    conditions, params = [], []
    for column, value in filters.items():
        params.append(value)
        conditions.append(f'CAST("{column}" AS VARCHAR) = ${len(params)}')
    for key, value in attrs.items():
        params += [key, value]
        conditions.append(f"exists (select 1 from json_each(attrs) where key = ${len(params) - 1} "
                          f"and value ->> '$' = ${len(params)})")
    return (" where " + " and ".join(conditions) if conditions else ""), params


def open(path: str | Path | None = None, version: int | None = None) -> Warehouse:  # noqa: A001
    """Open the warehouse at `path` (default: $TRACEWH_HOME/warehouse), optionally as of a version.

    Lazy: a path without a store opens (`open(path).ingest(...)` creates the store there), and
    its first read raises NotFoundError naming the path; `open(path).exists()` asks first."""
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
            recorder.safely("ingest into the warehouse", recorder.ingest_into, Warehouse(warehouse))
