"""`tracewh`: ingest agent-benchmark traces, query them with SQL, export them.

Each command parses flags, calls one library function, and prints. Errors a user
can fix print one line to stderr and exit non-zero (2 for bad input).
"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape

from .. import __version__
from ..errors import TracewhError
from ..schema.docs import schema_markdown
from ..paths import default_home, default_warehouse
from ..warehouse.api import Warehouse
from .ingest_progress import RichListener, report_table
from .output import Format, render

app = typer.Typer(
    help="tracewh: a warehouse for LLM-agent benchmark traces. Events go to Parquet (Delta Lake); "
    "metrics are DuckDB SQL views. Store: --warehouse DIR, else $TRACEWH_HOME/warehouse "
    "(TRACEWH_HOME defaults to ~/.tracewh).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True)

WarehouseOpt = Annotated[
    Optional[Path],
    typer.Option("--warehouse", "-w", help="Store directory. Default: $TRACEWH_HOME/warehouse, ~/.tracewh/warehouse.",
                 show_default=False),
]
AsOfOpt = Annotated[Optional[int], typer.Option("--as-of", help="Query the store as it was at this version (see `tracewh log`).")]
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]


def _open(warehouse: Path | None, version: int | None = None) -> Warehouse:
    return Warehouse(warehouse or default_warehouse(), version)


def _print_table(result, fmt: Format) -> None:
    """A DuckDB relation or Arrow table, rendered to stdout."""
    table = result.to_arrow_table() if hasattr(result, "to_arrow_table") else result
    sys.stdout.write(render(table, fmt))


def _parse_attrs(pairs: list[str]) -> dict[str, str]:
    attrs = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"{pair!r} is not key=value", param_hint="--attr")
        attrs[key.strip()] = value
    return attrs


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Zip archives, directories, .jsonl or .jsonl.gz files.", show_default=False)],
    attr: Annotated[list[str], typer.Option("--attr", "-a", help="Run attribute a format lacks, key=value (repeatable), e.g. model=gpt-5.4.")] = [],  # noqa: B006
    warehouse: WarehouseOpt = None,
    max_line_mb: Annotated[int, typer.Option(help="Refuse records larger than this.")] = 256,
    max_file_gb: Annotated[int, typer.Option(help="Refuse files that decompress to more than this.")] = 16,
    prices: Annotated[Optional[Path], typer.Option(help="Model price file (JSON) for logs without costs. "
                                                   "Default: $TRACEWH_HOME/prices.json if present, else built-in prices.",
                                                   show_default=False)] = None,
    quarantine: Annotated[bool, typer.Option("--quarantine", help="Hold events that fail the data-quality gate "
                                             "(see `tracewh quarantine`) and commit the rest, instead of refusing the batch.")] = False,
    check: Annotated[bool, typer.Option("--check/--no-check", help="Run the data-quality gate before each commit.")] = True,
) -> None:
    """Ingest run archives. Each archive/file/directory commits atomically; re-ingesting adds nothing."""
    from ..ingest.prices import PriceRegistry
    from ..ingest.sources import Limits

    if prices is not None and not prices.exists():
        raise typer.BadParameter(f"{prices} does not exist", param_hint="--prices")
    wh = _open(warehouse)
    limits = Limits(max_member_bytes=max_file_gb << 30, max_line_bytes=max_line_mb << 20)
    registry = PriceRegistry.load(prices)
    with RichListener(err) as listener:
        report = wh.ingest(paths, _parse_attrs(attr), limits=limits, listener=listener, prices=registry,
                           check=check, quarantine=quarantine)
    Console().print(report_table(report))


DialectOpt = Annotated[str, typer.Option(help="SQL dialect the query is written in (postgres, mysql, sqlite, spark, "
                                              "trino, bigquery, snowflake, ...); it is transpiled to DuckDB.")]


@app.command()
def sql(
    query: Annotated[str, typer.Argument(help="SQL over `events` and the views (`tracewh views`); '-' reads stdin.")],
    format: FormatOpt = Format.table,  # noqa: A002
    dialect: DialectOpt = "duckdb",
    as_of: AsOfOpt = None,
    warehouse: WarehouseOpt = None,
) -> None:
    """Run a read-only SQL query and print the result."""
    from ..queries.guard import prepare_query

    text = prepare_query(sys.stdin.read() if query == "-" else query, dialect)
    _print_table(run_query(_open(warehouse, as_of), text), format)


def run_query(wh: Warehouse, text: str):
    """Run a prepared query; unknown names get a 'did you mean'."""
    import duckdb

    from ..queries.guard import QueryError, did_you_mean
    from ..queries.registry import load_views
    from ..schema import COLUMN_NAMES

    try:
        result = wh.sql(text)
    except (duckdb.CatalogException, duckdb.BinderException) as e:
        names = [v.name for v in load_views()] + list(COLUMN_NAMES)
        raise QueryError(f"{e}{did_you_mean(str(e), names)}") from None
    if result is None:
        raise TracewhError("the statement returned no result; `tracewh sql` is for queries")
    return result


@app.command()
def views(
    warehouse: WarehouseOpt = None,
    sql_text: Annotated[bool, typer.Option("--sql", help="Print every view's definition, in dependency order.")] = False,
    dialect: Annotated[str, typer.Option(help="With --sql: the dialect to print (duckdb, spark, databricks, trino, ...).")] = "duckdb",
    location: Annotated[Optional[str], typer.Option(help="With --sql: where the engine finds the store's events table "
                                                    "(s3://bucket/tracewh/events, ...). Default: WAREHOUSE/events.",
                                                    show_default=False)] = None,
) -> None:
    """List every view with a one-line description and its columns.

    With --sql: a script of every view's definition in dependency order, for another engine.
    For duckdb, spark and databricks it starts by defining `events_raw` over the warehouse's
    files, so it runs as is (docs/scale-out.md)."""
    if sql_text:
        from ..queries.dialects import view_script

        events = location or str(((warehouse or default_warehouse()) / "events").absolute())
        print(view_script(dialect, events, __version__), end="")
        return
    console = Console()
    for view in _open(warehouse).views():
        console.print(f"[bold]{view.name}[/bold]  {view.description}")
        console.print("    " + ", ".join(f"{name} [dim]{kind.lower()}[/dim]" for name, kind in view.columns), highlight=False)


@app.command()
def log(warehouse: WarehouseOpt = None, format: FormatOpt = Format.table) -> None:  # noqa: A002
    """List committed batches: version, time, source, digest, event counts."""
    import pyarrow as pa

    rows = [{"version": b.version, "time": b.time, "source": b.source, "format": b.adapters, "digest": b.digest[:16],
             "events": b.events, "duplicates": b.duplicates,
             "kinds": ", ".join(f"{k} {n}" for k, n in b.kinds.items())} for b in _open(warehouse).log()]
    if not rows:
        err.print("no batches committed yet; add some with `tracewh ingest`")
        return
    _print_table(pa.Table.from_pylist(rows), format)


@app.command("export-events")
def export_events(
    out: Annotated[Path, typer.Argument(help="Output file (.jsonl or .jsonl.gz); '-' for stdout.")],
    run: Annotated[list[str], typer.Option("--run", help="Only this run (repeatable).")] = [],  # noqa: B006
    as_of: AsOfOpt = None,
    warehouse: WarehouseOpt = None,
) -> None:
    """Write events in the native tracewh-events/1 format (ingestable again)."""
    from ..warehouse.export import export_events as export

    n = export(_open(warehouse, as_of), out, run_ids=run or None)
    err.print(f"wrote {n} events to {out}")


stats_app = typer.Typer(help="DecisionBench statistics with paired bootstrap CIs (basic interval, fixed seed).",
                        no_args_is_help=True)
app.add_typer(stats_app, name="stats")
BaselineOpt = Annotated[str, typer.Option(help="Condition the others are compared with.")]
BootOpt = Annotated[int, typer.Option("--n-boot", help="Bootstrap resamples.", min=100)]
SeedOpt = Annotated[int, typer.Option(help="Random seed (results are reproducible).")]


@stats_app.command("delta")
def stats_delta(baseline: BaselineOpt = "blind", n_boot: BootOpt = 5000, seed: SeedOpt = 0,
                format: FormatOpt = Format.table, as_of: AsOfOpt = None,  # noqa: A002
                warehouse: WarehouseOpt = None) -> None:
    """Δq per model x suite x condition vs the baseline condition, paired on task id, with 95% CIs."""
    from ..analytics.decisionbench_stats import paired_delta

    result = paired_delta(_open(warehouse, as_of), baseline, n_boot, seed)
    _print_table(result, format)


@stats_app.command("hypervolume")
def stats_hypervolume(baseline: BaselineOpt = "blind", n_boot: BootOpt = 5000, seed: SeedOpt = 0,
                      format: FormatOpt = Format.table, as_of: AsOfOpt = None,  # noqa: A002
                      warehouse: WarehouseOpt = None) -> None:
    """Pareto hypervolume in (quality, -cost) per suite x condition; ΔHV vs baseline, bootstrap over models."""
    from ..analytics.decisionbench_stats import pareto_hypervolume

    result = pareto_hypervolume(_open(warehouse, as_of), baseline, n_boot, seed)
    _print_table(result, format)


@app.command()
def cards(
    out: Annotated[Path, typer.Option(help="Folder for the cards (one <model>.md each).")],
    variant: Annotated[str, typer.Option(help="Card variant; tracewh derives c2 (from Stage-1 events).")] = "c2",
    as_of: AsOfOpt = None,
    warehouse: WarehouseOpt = None,
) -> None:
    """Write DecisionBench profile cards from Stage-1 events: YAML front matter, strengths, weaknesses, all skills."""
    from ..analytics.profile_cards import write_cards

    try:
        paths = write_cards(_open(warehouse, as_of), out, variant)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--variant") from None
    err.print(f"wrote {len(paths)} cards to {out}")


@app.command("export")
def export_table(
    target: Annotated[Optional[str], typer.Argument(help="A view name (see `tracewh views`).", show_default=False)] = None,
    query: Annotated[Optional[str], typer.Option("--query", "-q", help="A read-only query instead of a view.")] = None,
    format: Annotated[str, typer.Option("--format", "-f", help="csv, json, markdown, latex or parquet.")] = "csv",  # noqa: A002
    out: Annotated[Optional[Path], typer.Option(help="Output file; default: stdout (text formats).")] = None,
    where: Annotated[Optional[str], typer.Option(help="Filter rows, e.g. \"mode = 'direct'\".")] = None,
    pivot: Annotated[Optional[str], typer.Option(help="Column whose values become columns (e.g. k).")] = None,
    value: Annotated[Optional[str], typer.Option(help="With --pivot: the column that fills the cells.")] = None,
    decimals: Annotated[Optional[int], typer.Option(help="Round numbers to this many decimals.")] = None,
    scale: Annotated[Optional[float], typer.Option(help="Multiply floating-point columns (e.g. 100 for points).")] = None,
    bold: Annotated[Optional[str], typer.Option(help="max or min: bold the best value per column (latex, markdown).")] = None,
    caption: Annotated[Optional[str], typer.Option(help="Table caption (latex, markdown).")] = None,
    label: Annotated[Optional[str], typer.Option(help="LaTeX \\label.")] = None,
    dialect: DialectOpt = "duckdb",
    as_of: AsOfOpt = None,
    warehouse: WarehouseOpt = None,
) -> None:
    """Export a view or query as a table for a paper, with its provenance (store version, query, time)."""
    from ..analytics.paper_export import FORMATS, TableOptions, export, export_query
    from ..queries.guard import prepare_query

    if (target is None) == (query is None):
        raise typer.BadParameter("give a view name or --query (one of them)")
    if format not in FORMATS:
        raise typer.BadParameter(f"choose one of {', '.join(FORMATS)}", param_hint="--format")
    if format == "parquet" and out is None:
        raise typer.BadParameter("parquet needs --out FILE", param_hint="--out")
    text = prepare_query(query if query is not None else export_query(target), dialect)
    if where:
        text = f"select * from ({text}) where {where}"
        prepare_query(text)
    options = TableOptions(pivot, value, decimals, scale, bold, caption, label)
    try:
        data = export(_open(warehouse, as_of), text, format, options, out)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None
    if out is None:
        sys.stdout.write(data.decode())
    else:
        err.print(f"wrote {out}", highlight=False)


@app.command("plot")
def plot_figure(
    kind: Annotated[str, typer.Argument(help="rs-curves, critical-curves, pareto, vendor-flow or role-accuracy.")],
    out: Annotated[Path, typer.Option(help="Image file: .png, .pdf or .svg.")],
    where: Annotated[Optional[str], typer.Option(help="Filter the view's rows, e.g. \"mode = 'direct'\".")] = None,
    as_of: AsOfOpt = None,
    warehouse: WarehouseOpt = None,
) -> None:
    """Draw a figure from a view (matplotlib)."""
    from ..analytics.plots import plot
    from ..queries.guard import prepare_query

    if out.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise typer.BadParameter("the file must end in .png, .pdf or .svg", param_hint="--out")
    if where:
        prepare_query(f"select 1 where {where}")
    try:
        plot(_open(warehouse, as_of), kind, out, where)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None
    err.print(f"wrote {out}", highlight=False)


@app.command("check")
def check_store(as_of: AsOfOpt = None, warehouse: WarehouseOpt = None,
                format: Annotated[Format, typer.Option("--format", "-f", help="table (a text report) or json.")] = Format.table,  # noqa: A002
                ) -> None:
    """Run the data-quality suites over the whole store and read back every Parquet file. Exit 1 on problems."""
    from ..ingest.quality.gate import check_events

    wh = _open(warehouse, as_of)
    unreadable = wh.store.unreadable_files(as_of)
    report = check_events(wh.con) if not unreadable else None
    if format is Format.json:
        result = report.to_dict() if report else {"passed": False}
        sys.stdout.write(json.dumps(result | {"unreadable_files": [{"file": f, "error": e} for f, e in unreadable]},
                                    indent=2, default=str) + "\n")
    else:
        for file, error in unreadable:
            Console().print(f"[red]unreadable[/red] {file}: {escape(error)}", highlight=False, soft_wrap=True)
        Console().print(report.to_text() if report else "data-quality suites not run: fix the unreadable files first",
                        highlight=False, markup=False, soft_wrap=True)
    if unreadable or (report and report.failed):
        raise typer.Exit(1)


@app.command("quarantine")
def quarantine_list(warehouse: WarehouseOpt = None, format: FormatOpt = Format.table,  # noqa: A002
                    out: Annotated[Optional[Path], typer.Option(help="Export every held event (all columns) "
                                                                "to this .parquet or .jsonl file.")] = None) -> None:
    """List the events the data-quality gate held back (ingest --quarantine), with their reasons."""
    from ..warehouse.quarantine import Quarantine

    wh = _open(warehouse)
    held = Quarantine(wh.path).relation(wh.con)
    if out is not None:
        held.write_parquet(str(out)) if out.suffix == ".parquet" else out.write_text(
            render(held.to_arrow_table(), Format.json))
        err.print(f"exported {held.to_arrow_table().num_rows} held events to {out}")
        return
    summary = held.project("quarantined_at, run_id, kind, source, event_id, array_to_string(reasons, ' | ') as reasons")
    _print_table(summary, format)


@app.command()
def doctor(warehouse: WarehouseOpt = None) -> None:
    """Find and remove what interrupted ingests left behind (uncommitted files, staging folders)."""
    found = _open(warehouse).store.doctor()
    for what, paths in found.items():
        err.print(f"{what}: {len(paths)} removed", highlight=False)
        for path in paths:
            err.print(f"  {path}", highlight=False)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8787,
    warehouse: WarehouseOpt = None,
    token_env: Annotated[str, typer.Option(help="Environment variable holding the bearer token that POST /ingest "
                                           "requires (ingest is off without one).")] = "TRACEWH_SERVICE_TOKEN",
    row_cap: Annotated[int, typer.Option(help="Most rows a query returns.")] = 10_000,
    query_seconds: Annotated[float, typer.Option(help="Time limit per query.")] = 10.0,
    max_upload_mb: Annotated[int, typer.Option(help="Largest upload accepted by POST /ingest.")] = 512,
) -> None:
    """Serve the store over HTTP: views, read-only SQL, runs and traces; ingest behind a token. OpenAPI at /docs."""
    import os

    import uvicorn

    from ..service.app import ServiceConfig, create_app

    config = ServiceConfig(warehouse or default_warehouse(), os.environ.get(token_env) or None, row_cap,
                           query_seconds, max_upload_mb << 20)
    uvicorn.run(create_app(config), host=host, port=port, log_level="info")


@app.command()
def schema() -> None:
    """Print the event schema (columns, kinds, native format) as Markdown."""
    sys.stdout.write(schema_markdown())


@app.command()
def demo(
    warehouse: Annotated[Optional[Path], typer.Option("--warehouse", "-w", help="Demo store. Default: $TRACEWH_HOME/demo.", show_default=False)] = None,
    tasks: Annotated[int, typer.Option(help="Tasks per generated run.")] = 40,
    seed: Annotated[int, typer.Option(help="Random seed of the generated runs.")] = 7,
) -> None:
    """Generate demo runs, ingest them into a demo store, and print headline tables."""
    from ..demo.agent_runs import write_demo_runs
    from ..demo.decisionbench_runs import write_decisionbench_demo
    from ..demo.delegate52_runs import write_delegate52_demo
    from ..demo.entcollabbench_runs import write_entcollabbench_demo
    from ..demo.summary import headline_queries

    started = time.perf_counter()
    root = warehouse or default_home() / "demo"
    paths = [*write_demo_runs(root / "runs", tasks=tasks, seed=seed), write_delegate52_demo(root / "runs", seed=seed),
             write_decisionbench_demo(root / "runs", seed=seed), *write_entcollabbench_demo(root / "runs", seed=seed)]
    wh = Warehouse(root / "warehouse")
    with RichListener(err) as listener:
        report = wh.ingest(paths, listener=listener)
    console = Console()
    console.print(report_table(report))
    for title, query in headline_queries():
        console.print(f"\n[bold]{title}[/bold]")
        _print_table(wh.sql(query), Format.table)
    console.print(f"\nDemo store: {wh.path} (version {wh.version}), built in {time.perf_counter() - started:.1f}s.\n"
                  f"Try: tracewh sql -w {wh.path} \"select * from runs\"", highlight=False)


def version_callback(value: bool) -> None:
    if value:
        print(f"tracewh {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=version_callback, is_eager=True, help="Print the version.")] = False) -> None:
    pass


def main() -> None:
    """Entry point. Typer reports usage errors itself; ours become one line and an exit code."""
    import duckdb

    # SIGTERM (a job scheduler, `timeout`) ends the process through SystemExit, so staging
    # folders and temporary files are cleaned up on the way out like on Ctrl-C.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        app()
    except TracewhError as e:
        _fail("error", e, e.exit_code)
    except duckdb.Error as e:
        _fail("SQL error", e, 1)


def _fail(label: str, error: Exception, code: int) -> None:
    err.print(f"[red]{label}:[/red] {escape(str(error))}", highlight=False, soft_wrap=True)
    sys.exit(code)
