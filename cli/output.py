"""Rendering for the terminal and for files: tables (table, csv, json, markdown), the check
report, the quarantine summary. Nothing here reads the store."""

from __future__ import annotations

import enum
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

    from ..api import CheckResult


class Format(str, enum.Enum):
    table = "table"
    csv = "csv"
    json = "json"
    markdown = "markdown"


class _Stderr:
    """A rich console on stderr, created on first use (rich costs import time `--help` need not pay)."""

    _console = None

    def print(self, *args: Any, **kwargs: Any) -> None:
        if self._console is None:
            from rich.console import Console

            _Stderr._console = Console(stderr=True)
        self._console.print(*args, **kwargs)

    @property
    def console(self):  # noqa: ANN201 - rich.console.Console, imported lazily
        self.print(end="")
        return self._console


err = _Stderr()


def as_arrow(data: Any) -> pa.Table:
    """An Arrow table from a table, a DuckDB relation or a list of row dicts."""
    import pyarrow as pa

    if isinstance(data, list):
        return pa.Table.from_pylist(data)
    return data.to_arrow_table() if hasattr(data, "to_arrow_table") else data


def render(table: pa.Table, fmt: Format) -> str:
    import polars as pl

    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    if fmt is Format.csv:
        return frame.write_csv()
    if fmt is Format.json:
        return frame.write_ndjson()
    style = "MARKDOWN" if fmt is Format.markdown else "UTF8_FULL_CONDENSED"
    with pl.Config(tbl_formatting=style, tbl_hide_column_data_types=True,
                   tbl_hide_dataframe_shape=True, tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200,
                   fmt_str_lengths=80, float_precision=None):
        return str(frame) + "\n"


def print_table(data: Any, fmt: Format) -> None:
    sys.stdout.write(render(as_arrow(data), fmt))


def write_table(table: pa.Table, out: Path) -> None:
    """Parquet for .parquet, else JSON lines."""
    if out.suffix == ".parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, out)
    else:
        out.write_text(render(table, Format.json))


def quarantine_summary(held: pa.Table) -> pa.Table:
    """One line per held event: when, where from, why."""
    import pyarrow as pa

    reasons = pa.array([" | ".join(r or []) for r in held["reasons"].to_pylist()], pa.string())
    return held.select(["quarantined_at", "run_id", "kind", "source", "event_id"]).append_column("reasons", reasons)


def print_check(result: CheckResult, fmt: Format) -> None:
    if fmt is Format.json:
        sys.stdout.write(json.dumps(result.to_dict(), indent=2, default=str) + "\n")
        return
    from rich.console import Console
    from rich.markup import escape

    console = Console()
    for file, error in result.unreadable:
        console.print(f"[red]unreadable[/red] {file}: {escape(error)}", highlight=False, soft_wrap=True)
    text = result.report.to_text() if result.report else "data-quality suites not run: fix the unreadable files first"
    console.print(text, highlight=False, markup=False, soft_wrap=True)
