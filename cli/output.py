"""Rendering for the terminal and for files: tables (table, csv, json, markdown), the check
report, the quarantine summary. Nothing here reads the store.

Results arrive as column names and Python rows (analytics/text.py renders them).
"""

from __future__ import annotations

import enum
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..analytics import text

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
        # A note on stderr is one line: rich would break a long path at its width (80 columns
        # when stderr is not a terminal), and a path split in two does not paste.
        kwargs.setdefault("soft_wrap", True)
        self.console.print(*args, **kwargs)

    @property
    def console(self):  # noqa: ANN201 - rich.console.Console, imported lazily
        if _Stderr._console is None:
            from rich.console import Console

            _Stderr._console = Console(stderr=True)
        return _Stderr._console


err = _Stderr()


def columns_and_rows(data: Any) -> tuple[list[str], list[tuple]]:
    """Column names and rows of a QueryResult, a DuckDB relation, an Arrow table or a list of dicts."""
    if isinstance(data, list):
        columns = list(data[0]) if data else []
        return columns, [tuple(row[c] for c in columns) for row in data]
    if hasattr(data, "fetchall"):  # a QueryResult or a DuckDB relation
        return data.columns, data.fetchall()
    return data.column_names, list(zip(*(c.to_pylist() for c in data.columns)))


def render(columns: list[str], rows: list[tuple], fmt: Format, display: text.Display = text.Display()) -> str:
    return text.render(columns, rows, fmt.value, display)


def print_table(data: Any, fmt: Format, decimals: int | None = None) -> None:
    """`decimals`: floats shown in table and markdown (default text.DECIMALS; csv and json are exact).
    Long text is cut on a terminal only: a pipe or a file gets whole cells."""
    display = text.Display(text.DECIMALS if decimals is None else decimals, cut=sys.stdout.isatty())
    sys.stdout.write(render(*columns_and_rows(data), fmt, display))


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """'1 batch', '2 batches', '0 runs'."""
    return f"{n} {noun if n == 1 else nouns or noun + 's'}"


def write_table(table: pa.Table, out: Path) -> None:
    """Parquet for .parquet, else JSON lines."""
    if out.suffix == ".parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, out)
    else:
        out.write_text(render(*columns_and_rows(table), Format.json))


def quarantine_summary(held: pa.Table) -> list[dict[str, Any]]:
    """One line per held event: when, where from, why."""
    return [{"quarantined_at": r["quarantined_at"], "run_id": r["run_id"], "kind": r["kind"], "source": r["source"],
             "event_id": r["event_id"], "reasons": " | ".join(r["reasons"] or [])} for r in held.to_pylist()]


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
