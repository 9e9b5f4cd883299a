"""`tracewh`: ingest agent-benchmark traces, query them with SQL, export them.

Each command parses its flags, calls one Warehouse method (api.py) and renders what comes
back. Errors become one line on stderr and an exit code in one place (cli/errors.py).
Heavy modules are imported inside the commands that use them, so `tracewh --help` is quick.
The commands' annotations (here and in the other command modules) are evaluated once, at
import, not postponed: typer reads every command's parameters at each start, twice, and
evaluating them from text each time was half of the 26 ms that took.
"""

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from ..paths import default_home
from ..version import __version__
from . import collector
from .errors import run_app
from .compare import compare
from .mcp import mcp
from .release import release
from .judging import export_labels, judge, label, queue_app
from .options import (AsOfOpt, BaselineOpt, BootOpt, DecimalsOpt, DialectOpt, FormatOpt, SeedOpt,
                      WarehouseOpt)
from .options import open_warehouse as _open
from .output import Format, err, plural, print_table

if TYPE_CHECKING:
    from ..api import Warehouse

app = typer.Typer(
    help="tracewh: a warehouse for LLM-agent benchmark traces. Events go to Parquet (Delta Lake); "
    "metrics are DuckDB SQL views. Store: --warehouse DIR, else $TRACEWH_HOME/warehouse "
    "(TRACEWH_HOME defaults to ~/.tracewh).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

def _parse_attrs(pairs: list[str], option: str = "--attr") -> dict[str, str]:
    attrs = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"{pair!r} is not key=value", param_hint=option)
        attrs[key.strip()] = value
    return attrs


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Zip archives, folders, and .jsonl, .jsonl.gz, .json, .eval or .binpb "
                                                "files, in any mix.", show_default=False)],
    attr: Annotated[list[str], typer.Option("--attr", "-a", help="Run attribute a format lacks, key=value (repeatable), e.g. model=gpt-5.4.")] = [],  # noqa: B006
    warehouse: WarehouseOpt = None,
    max_line_mb: Annotated[int, typer.Option(help="Refuse records larger than this (MB). Ingest holds a 32 MB record within 1.1 GB of memory; larger ones need more.")] = 32,
    max_file_gb: Annotated[int, typer.Option(help="Refuse files that decompress to more than this.")] = 16,
    prices: Annotated[Optional[Path], typer.Option(help="Model price file (JSON) for logs without costs. "
                                                   "Default: $TRACEWH_HOME/prices.json if present, else built-in prices.",
                                                   show_default=False)] = None,
    quarantine: Annotated[bool, typer.Option("--quarantine", help="Hold events that fail the data-quality gate "
                                             "(see `tracewh quarantine`) and commit the rest, instead of refusing the batch.")] = False,
    check: Annotated[bool, typer.Option("--check/--no-check", help="Run the data-quality gate before each commit.")] = True,
    workers: Annotated[Optional[int], typer.Option("--workers", "-j", min=1, show_default=False,
                                                   help="Processes that read sources in parallel. Default: one per core "
                                                   "(Linux) once an ingest has read 1 MB; 1 reads everything in this process. "
                                                   "What is stored is the same either way.")] = None,
) -> None:
    """Ingest run archives (creates the store). Each archive/file/directory commits atomically; re-ingesting adds nothing.

    Formats, recognised by content: tracewh-events/1 (native), release folders (`tracewh release`),
    DecisionBench, EntCollabBench, DELEGATE-52, τ-bench, BFCL, Inspect AI, OpenTelemetry OTLP
    (docs/formats/). Files no format reads are skipped and named; an ingest that finds nothing
    to read fails (exit 2)."""
    if prices is not None and not prices.exists():
        raise typer.BadParameter(f"{prices} does not exist", param_hint="--prices")
    with collector.imports():  # pyarrow, duckdb, deltalake and the store's modules
        from ..ingest.prices import PriceRegistry
        from ..ingest.sources import Limits
        from ..ingest.stage import arrow_without_pandas
        from .ingest_progress import RichListener, print_report

        arrow_without_pandas()  # this process is tracewh's own
        store = _open(warehouse)
    limits = Limits(max_member_bytes=max_file_gb << 30, max_line_bytes=max_line_mb << 20)
    with RichListener(err.console) as listener:
        report = store.ingest(paths, _parse_attrs(attr), check, listener, quarantine=quarantine,
                              limits=limits, prices=PriceRegistry.load(prices), workers=workers)
    print_report(report)


@app.command()
def sql(
    query: Annotated[str, typer.Argument(help="SQL over `events` and the views (`tracewh views`); '-' reads stdin.")],
    format: FormatOpt = Format.table,  # noqa: A002
    dialect: DialectOpt = "duckdb",
    as_of: AsOfOpt = None,
    decimals: DecimalsOpt = None,
    warehouse: WarehouseOpt = None,
) -> None:
    """Run a read-only SQL query and print the result."""
    text = sys.stdin.read() if query == "-" else query
    print_table(_open(warehouse).query(text, dialect=dialect, as_of=as_of, arrow=False), format, decimals)


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
        print(_open(warehouse).view_script(dialect, location), end="")
        return
    # Plain text, written at once: styling it with rich cost more than the listing (docs/performance.md).
    sys.stdout.write("".join(f"{view.name}  {view.description}\n"
                             f"    {', '.join(f'{name} {kind.lower()}' for name, kind in view.columns)}\n"
                             for view in _open(warehouse).views()))


@app.command()
def log(warehouse: WarehouseOpt = None, format: FormatOpt = Format.table) -> None:  # noqa: A002
    """List commits: each batch (version, time, source, digest, event counts) and each optimize."""
    rows = [{"version": b.version, "time": b.time, "operation": b.operation, "source": b.source, "format": b.adapters,
             "digest": b.digest[:16], "events": b.events, "duplicates": b.duplicates,
             "kinds": ", ".join(f"{k} {n}" for k, n in b.kinds.items())} for b in _open(warehouse).log(maintenance=True)]
    if not rows:
        err.print("no batches committed yet; add some with `tracewh ingest`")
        return
    print_table(rows, format)


@app.command("export-events")
def export_events(
    out: Annotated[Path, typer.Argument(help="Output file (.jsonl or .jsonl.gz); '-' for stdout.")],
    run: Annotated[list[str], typer.Option("--run", help="Only this run (repeatable).")] = [],  # noqa: B006
    as_of: AsOfOpt = None,
    warehouse: WarehouseOpt = None,
) -> None:
    """Write events in the native tracewh-events/1 format (ingestable again)."""
    n = _open(warehouse, as_of).export_events(out, run_ids=run or None)
    err.print(f"wrote {n} events to {out}")


@app.command("export-otlp")
def export_otlp(
    out: Annotated[Optional[Path], typer.Argument(help="Output file of OTLP/JSON lines (one ExportTraceServiceRequest "
                                                  "a line); '-' for stdout. May be left out with --endpoint.",
                                                  show_default=False)] = None,
    run: Annotated[list[str], typer.Option("--run", help="Only this run (repeatable).")] = [],  # noqa: B006
    benchmark: Annotated[list[str], typer.Option("--benchmark", help="Only runs of this benchmark (repeatable).")] = [],  # noqa: B006
    model: Annotated[list[str], typer.Option("--model", help="Only runs where this model acted (repeatable).")] = [],  # noqa: B006
    endpoint: Annotated[Optional[str], typer.Option(help="POST the traces to this OTLP/HTTP URL, path included: a "
                                                    "Collector or Jaeger at http://localhost:4318/v1/traces, Phoenix at "
                                                    "http://localhost:6006/v1/traces, another tracewh serve.",
                                                    show_default=False)] = None,
    header: Annotated[list[str], typer.Option("--header", help="HTTP header for --endpoint, key=value (repeatable), "
                                              "e.g. 'Authorization=Bearer TOKEN'.")] = [],  # noqa: B006
    as_of: AsOfOpt = None,
    warehouse: WarehouseOpt = None,
) -> None:
    """Write runs as OpenTelemetry traces (GenAI conventions; delegation trees kept) and/or send them to an OTLP endpoint."""
    summary = _open(warehouse, as_of).export_otlp(out, run_ids=run or None, benchmarks=benchmark or None,
                                                  models=model or None, endpoint=endpoint,
                                                  headers=_parse_attrs(header, "--header"))
    where = " and ".join([*([str(out)] if out is not None else []), *([endpoint] if endpoint else [])])
    err.print(f"{plural(summary.spans, 'span')} of {plural(summary.runs, 'run')} in "
              f"{plural(summary.requests, 'request')} to {where}", highlight=False)
    for said in summary.said:  # the endpoint accepted every span but had something to say (an OTLP warning)
        err.print(f"warning from {endpoint}: {said}", highlight=False)


stats_app = typer.Typer(help="DecisionBench statistics with paired bootstrap CIs (basic interval, fixed seed).",
                        no_args_is_help=True)
app.add_typer(stats_app, name="stats")


@stats_app.command("delta")
def stats_delta(baseline: BaselineOpt = "blind", n_boot: BootOpt = 5000, seed: SeedOpt = 0,
                format: FormatOpt = Format.table, decimals: DecimalsOpt = None, as_of: AsOfOpt = None,  # noqa: A002
                warehouse: WarehouseOpt = None) -> None:
    """Δq per model x suite x condition vs the baseline condition, paired on task id, with 95% CIs."""
    print_table(_open(warehouse, as_of).paired_delta(baseline, n_boot, seed), format, decimals)


@stats_app.command("hypervolume")
def stats_hypervolume(baseline: BaselineOpt = "blind", n_boot: BootOpt = 5000, seed: SeedOpt = 0,
                      format: FormatOpt = Format.table, decimals: DecimalsOpt = None,  # noqa: A002
                      as_of: AsOfOpt = None, warehouse: WarehouseOpt = None) -> None:
    """Pareto hypervolume in (quality, -cost) per suite x condition; ΔHV vs baseline, bootstrap over models."""
    print_table(_open(warehouse, as_of).hypervolume(baseline, n_boot, seed), format, decimals)


@app.command()
def cards(
    out: Annotated[Path, typer.Option(help="Folder for the cards (one <model>.md each).")],
    variant: Annotated[str, typer.Option(help="Card variant; tracewh derives c2 (from Stage-1 events).")] = "c2",
    as_of: AsOfOpt = None,
    warehouse: WarehouseOpt = None,
) -> None:
    """Write DecisionBench profile cards from Stage-1 events: YAML front matter, strengths, weaknesses, all skills."""
    paths = _open(warehouse, as_of).cards(out, variant)
    err.print(f"wrote {plural(len(paths), 'card')} to {out}", highlight=False)


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
    from ..analytics.paper_export import TableOptions

    options = TableOptions(pivot, value, decimals, scale, bold, caption, label)
    data = _open(warehouse, as_of).export(target, query=query, fmt=format, options=options, out=out, where=where,
                                          dialect=dialect)
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
    _open(warehouse, as_of).plot(kind, out, where)
    err.print(f"wrote {out}", highlight=False)


@app.command("check")
def check_store(as_of: AsOfOpt = None, warehouse: WarehouseOpt = None,
                format: Annotated[Format, typer.Option("--format", "-f", help="table (a text report) or json.")] = Format.table,  # noqa: A002
                ) -> None:
    """Run the data-quality suites over the whole store and read back every Parquet file. Exit 1 on problems."""
    from .output import print_check

    result = _open(warehouse, as_of).check()
    print_check(result, format)
    if not result.passed:
        raise typer.Exit(1)


@app.command("quarantine")
def quarantine_list(warehouse: WarehouseOpt = None, format: FormatOpt = Format.table,  # noqa: A002
                    out: Annotated[Optional[Path], typer.Option(help="Export every held event (all columns) "
                                                                "to this .parquet or .jsonl file.")] = None) -> None:
    """List the events the data-quality gate held back (ingest --quarantine), with their reasons."""
    from .output import quarantine_summary, write_table

    held = _open(warehouse).quarantine()
    if out is not None:
        write_table(held, out)
        err.print(f"exported {plural(held.num_rows, 'held event')} to {out}", highlight=False)
        return
    if not held.num_rows:  # an empty table would be a box with no columns
        err.print("nothing held: no ingest has quarantined an event (ingest --quarantine)")
        return
    print_table(quarantine_summary(held), format)


@app.command()
def optimize(warehouse: WarehouseOpt = None) -> None:
    """Compact the small files many small commits leave (OTLP ingest) into large ones, in one commit.

    Query results do not change and every past version stays readable: nothing is vacuumed, so
    the replaced files stay on disk. Read the store through its Delta log (tracewh, deltalake,
    pl.scan_delta), not a glob of its Parquet files, which would see both."""
    result = _open(warehouse).optimize()
    err.print(f"data files: {result['files_before']} -> {result['files_after']} (store version {result['version']})",
              highlight=False)


@app.command()
def doctor(warehouse: WarehouseOpt = None) -> None:
    """Find and remove what interrupted ingests left behind (uncommitted files, staging folders)."""
    for what, paths in _open(warehouse).doctor().items():
        err.print(f"{what}: {len(paths)} removed", highlight=False)
        for path in paths:
            err.print(f"  {path}", highlight=False)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8787,
    warehouse: WarehouseOpt = None,
    token_env: Annotated[str, typer.Option(help="Environment variable holding the bearer token that POST /ingest "
                                           "and POST /v1/traces (OTLP) require (both are off without one).")] = "TRACEWH_SERVICE_TOKEN",
    row_cap: Annotated[int, typer.Option(help="Most rows a query returns.")] = 10_000,
    query_seconds: Annotated[float, typer.Option(help="Time limit per query.")] = 10.0,
    max_upload_mb: Annotated[int, typer.Option(help="Largest upload accepted by POST /ingest.")] = 512,
    max_response_mb: Annotated[int, typer.Option(help="Largest query answer; rows past it are cut (truncated: true).")] = 64,
    query_process_mb: Annotated[int, typer.Option(min=256, help="Memory one query's worker process may reach; past "
                                                  "it the query is stopped (docs/reliability.md).")] = 1024,
    spill_mb: Annotated[int, typer.Option(min=0, help="Disk all running queries together may spill to (a temporary "
                                          "folder of the server's own, removed when it stops).")] = 1024,
    allow_host: Annotated[list[str], typer.Option("--allow-host", help="Another name clients may reach the server by "
                                                  "(Host header; repeatable). Loopback names and --host are always "
                                                  "allowed.")] = [],  # noqa: B006
    header_timeout: Annotated[float, typer.Option(help="Seconds a client has to send a request's headers.")] = 10.0,
    max_connections: Annotated[int, typer.Option(help="Open connections at most; more get 503.")] = 1000,
    public_read: Annotated[bool, typer.Option("--public-read", help="With a token, let reads (views, SQL, runs, "
                                              "the web page) through without it; ingest still needs it.")] = False,
    otlp_spool_mb: Annotated[int, typer.Option(min=1, help="OTLP requests answered and waiting to be committed, at "
                                               "most; past it POST /v1/traces answers 503 with Retry-After.")] = 256,
    compact_files: Annotated[int, typer.Option(min=2, help="Compact (as `tracewh optimize`) once a partition holds "
                                               "more files under 1 MB than this (into 1 MB files), or 8 times as many "
                                               "under 16 MB (into 16 MB files); checked after commits the service makes.")] = 8,
    compact_every: Annotated[float, typer.Option(min=0.0, help="Seconds between two such checks.")] = 5.0,
    result_cache_mb: Annotated[int, typer.Option(min=0, help="Memory for answers kept per store version: a query "
                                                 "repeated before the next commit is answered without running again "
                                                 "(0: keep none).")] = 64,
) -> None:
    """Serve the store over HTTP: views, read-only SQL, runs and traces; ingest behind a token. OpenAPI at /docs."""
    import os

    from ..service.app import create_app
    from ..service.config import ServiceConfig
    from ..service.server import run

    hosts = tuple(dict.fromkeys([*ServiceConfig.allowed_hosts_default(), host, *allow_host]))
    _check_served_store(_open(warehouse), os.environ.get(token_env))
    config = ServiceConfig(_open(warehouse).path, os.environ.get(token_env) or None, row_cap, query_seconds,
                           max_upload_mb << 20, max_response_mb << 20, allowed_hosts=hosts, public_read=public_read,
                           query_process_memory=query_process_mb << 20, query_temp_bytes=spill_mb << 20,
                           otlp_spool_bytes=otlp_spool_mb << 20, compact_files=compact_files,
                           compact_interval_seconds=compact_every, result_cache_bytes=result_cache_mb << 20)
    run(create_app(config), host, port, header_timeout, max_connections)


def _check_served_store(store: "Warehouse", token: str | None) -> None:
    """A server over no store is a mistyped path (NotFoundError, as every read), unless it has
    a token: then POST /ingest and the OTLP receiver may create the store, and it serves it empty till then."""
    if store.exists():
        return
    if not token:
        store.require_store()
    err.print(f"no store at {store.path} yet: POST /ingest or /v1/traces creates it", highlight=False)


@app.command()
def schema() -> None:
    """Print the event schema (columns, kinds, native format) as Markdown."""
    from ..schema.docs import schema_markdown

    sys.stdout.write(schema_markdown())


@app.command()
def demo(
    warehouse: Annotated[Optional[Path], typer.Option("--warehouse", "-w", help="Demo folder: the generated archives go to "
                                                      "DIR/runs, the store to DIR/warehouse. Default: $TRACEWH_HOME/demo "
                                                      "(store $TRACEWH_HOME/demo/warehouse).", show_default=False)] = None,
    tasks: Annotated[int, typer.Option(help="Tasks per generated run.")] = 40,
    seed: Annotated[int, typer.Option(help="Random seed of the generated runs.")] = 7,
) -> None:
    """Generate demo runs, ingest them into a demo store, and print headline tables."""
    from rich.console import Console

    from ..demo.build import build_demo
    from ..demo.summary import headline_queries
    from .ingest_progress import RichListener, print_report

    started = time.perf_counter()
    with RichListener(err.console) as listener:
        wh, report = build_demo(warehouse or default_home() / "demo", tasks, seed, listener)
    console = Console()
    print_report(report)
    for title, query in headline_queries():
        console.print(f"\n[bold]{title}[/bold]")
        print_table(wh.query(query, arrow=False), Format.table)
    console.print(f"\nDemo store: {wh.path} (version {wh.version}), built in {time.perf_counter() - started:.1f}s; "
                  f"its source archives are in {wh.path.parent / 'runs'}.\n"
                  f"Try: tracewh sql -w {wh.path} \"select * from runs\"", highlight=False)


app.command()(judge)
app.command()(label)
app.command("export-labels")(export_labels)
app.add_typer(queue_app, name="queue")
app.command()(compare)
app.command()(mcp)
app.command()(release)


def version_callback(value: bool) -> None:
    if value:
        print(f"tracewh {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=version_callback, is_eager=True, help="Print the version.")] = False) -> None:
    pass


def main() -> None:
    """Entry point (`tracewh`, `python -m tracewh`)."""
    run_app(app)
