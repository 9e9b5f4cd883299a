"""Progress bar and summary table for ingest, on the terminal only."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from ..ingest.pipeline import IngestReport, Listener, SourceReport, skipped_summary
from ..ingest.sources import Source
from .output import err, plural

if TYPE_CHECKING:
    from rich.progress import Progress


class RichListener(Listener):
    """A byte-level bar per source, on a terminal only: where stderr is not one (CI, pipes) no bar
    is drawn, and rich.progress is not even imported."""

    def __init__(self, console: Console):
        self.console = console
        self.progress = _progress(console) if console.is_terminal else None
        self.task = None

    def __enter__(self) -> RichListener:
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.progress is not None:
            self.progress.stop()

    def start_source(self, source: Source) -> None:
        if self.progress is None:
            return
        # A source staged may wait to commit with the next ones (ingest/pipeline.py): its bar goes
        # when the next one starts.
        if self.task is not None:
            self.progress.remove_task(self.task)
        self.task = self.progress.add_task(source.path.name, total=source.stored_bytes)

    def advance(self, stored_bytes: int) -> None:
        if self.task is not None:
            self.progress.advance(self.task, stored_bytes)

    def end_source(self, report: SourceReport) -> None:
        if self.task is not None:
            self.progress.remove_task(self.task)
            self.task = None
        # Through the console the bar draws on: rich prints above a live bar.
        if report.skipped_files:
            self.console.print(f"{escape(report.source)}: skipped {plural(len(report.skipped_files), 'file')} "
                               f"that no format reads ({escape(', '.join(report.skipped_files[:5]))}"
                               f"{', ...' if len(report.skipped_files) > 5 else ''})", highlight=False)
        for flag in report.flags:
            self.console.print(f"[yellow]{escape(report.source)}[/yellow]: {escape(flag)}", highlight=False,
                               soft_wrap=True)


def _progress(console: Console) -> Progress:
    from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn,
                               TransferSpeedColumn)

    return Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                    TimeRemainingColumn(), console=console, transient=True)


def report_table(report: IngestReport) -> Table:
    table = Table(title="ingest", title_justify="left")
    for column in ("source", "format", "records", "added", "duplicates", "version"):
        table.add_column(column, justify="left" if column in ("source", "format") else "right")
    for s in report.sources:
        version = "already ingested" if s.commit.already_ingested else (str(s.commit.version) if s.commit.version is not None else "-")
        table.add_row(Path(s.source).name, ",".join(sorted(set(s.adapters))) or "-", str(s.read), str(s.commit.added),
                      str(s.commit.duplicates), version)
    return table


def report_summary(report: IngestReport) -> str:
    return (f"{plural(len(report.sources), 'batch', 'batches')}: {plural(report.added, 'event')} added, "
            f"{plural(report.duplicates, 'duplicate event')}, "
            f"{plural(report.already_ingested, 'batch', 'batches')} already ingested"
            + (f", {plural(report.quarantined, 'event')} quarantined" if report.quarantined else ""))


def print_report(report: IngestReport) -> None:
    """The summary table and its totals on stdout, whole: cells are cut to the terminal's width
    only on a terminal (a pipe or a file gets every source name); then what was skipped, on stderr."""
    console = Console()
    table = report_table(report)
    if not console.is_terminal:
        widest = Measurement.get(console, console.options.update_width(1 << 16), table).maximum
        console = Console(width=max(console.width, widest))
    console.print(table)
    console.print(report_summary(report), highlight=False, soft_wrap=True)
    if report.skipped:
        err.print(escape(skipped_summary(report.skipped)), highlight=False, soft_wrap=True)
