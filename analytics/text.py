"""Rows as text: CSV, JSON lines, Markdown and a terminal table, from column names and Python
rows. Shared by the CLI, the HTTP service's downloads and the web page, and free of Arrow
and dataframe libraries: loading one would cost more than most queries (docs/performance.md).
"""

from __future__ import annotations

import csv
import io
import json
import math
import unicodedata
from dataclasses import dataclass
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

TEXT_WIDTH = 80  # longer text cells are cut in `table` and `markdown` on a terminal (full in csv and json)
DECIMALS = 4  # floats in `table` and `markdown` are shown to this many decimals (exact in csv and json)
FORMATS = ("table", "csv", "json", "markdown")


@dataclass(frozen=True)
class Display:
    """How `table` and `markdown` show cells: floats to `decimals` places (float sums such as
    19.591431000000007 read as 19.5914); text cut at TEXT_WIDTH when `cut` (a terminal: a pipe
    or a file gets every character)."""

    decimals: int = DECIMALS
    cut: bool = True


def render(columns: list[str], rows: list[tuple], fmt: str, display: Display = Display()) -> str:
    """`fmt`: one of FORMATS. csv and json hold values exactly; `display` is for the other two."""
    if fmt == "csv":
        return to_csv(columns, rows)
    if fmt == "json":
        return "".join(json.dumps(dict(zip(columns, map(json_value, row))), ensure_ascii=False) + "\n" for row in rows)
    if fmt == "markdown":
        return _markdown(columns, rows, display)
    return _table(columns, rows, display)


def cell_text(value: Any) -> str:
    """One cell as text: what SQL and CSV readers expect (true/false, ISO times, JSON for nested)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "\\x" + bytes(value).hex()
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(json_value(value), ensure_ascii=False)
    return str(value)


def json_value(value: Any) -> Any:
    """A value JSON can hold: nested values kept, numbers as numbers, times and bytes as text."""
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Decimal):
        return float(value)
    return cell_text(value)


def to_csv(columns: list[str], rows: list[tuple]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([cell_text(v) for v in row] for row in rows)
    return out.getvalue()


def float_text(value: float, decimals: int) -> str:
    """A float rounded for reading: `decimals` places, trailing zeros dropped (one kept: 2.0);
    a value that would round to zero keeps its significant digits (1.2e-07, never a made-up 0)."""
    if not math.isfinite(value):
        return str(value)
    text = f"{value:.{decimals}f}"
    if float(text) == 0 and value != 0:
        return f"{value:.{max(decimals, 1)}g}"
    whole, _, fraction = text.partition(".")
    return f"{whole}.{fraction.rstrip('0') or '0'}" if fraction else whole


def _short(value: Any, display: Display) -> str:
    if value is None:
        text = "null"
    elif isinstance(value, float):
        text = float_text(value, display.decimals)
    else:
        text = cell_text(value).replace("\n", "\\n")
    return text if not display.cut or len(text) <= TEXT_WIDTH else text[: TEXT_WIDTH - 1] + "…"


def _markdown(columns: list[str], rows: list[tuple], display: Display) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |\n"

    numeric = [_is_numeric(rows, i) for i in range(len(columns))]
    rule = "|" + "|".join("---:" if n else "---" for n in numeric) + "|\n"
    return line(columns) + rule + "".join(line([_short(v, display) for v in row]) for row in rows)


def _table(columns: list[str], rows: list[tuple], display: Display) -> str:
    """A box-drawn table, numbers right-aligned. Written here rather than with rich, whose import
    and per-cell rendering cost more than the query behind most tables (docs/performance.md)."""
    cells = [list(columns)] + [[_short(v, display) for v in row] for row in rows]
    widths = [max(_width(line[i]) for line in cells) for i in range(len(columns))]
    right = [_is_numeric(rows, i) for i in range(len(columns))]

    def rule(left: str, middle: str, end: str) -> str:
        return left + middle.join("─" * (w + 2) for w in widths) + end + "\n"

    def line(values: list[str], align: list[bool]) -> str:
        padded = (" " * (w - _width(v)) + v if r else v + " " * (w - _width(v)) for v, w, r in zip(values, widths, align))
        return ("│ " + " │ ".join(padded) + " │").rstrip() + "\n"

    body = "".join(line(values, right) for values in cells[1:])
    return rule("┌", "┬", "┐") + line(cells[0], right) + rule("├", "┼", "┤") + body + rule("└", "┴", "┘")


def _width(text: str) -> int:
    """Terminal columns: wide (CJK) characters take two, combining marks none."""
    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _is_numeric(rows: list[tuple], i: int) -> bool:
    values = [row[i] for row in rows if row[i] is not None]
    return bool(values) and all(isinstance(v, (int, float, Decimal)) and not isinstance(v, bool) for v in values)
