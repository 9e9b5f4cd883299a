"""HTML out: the Jinja2 environment, value formatting, URLs, and responses with the page's
security headers.

Every template is autoescaped (whatever its name) and nothing marks data safe: values reach
the page as text, JSON payloads as escaped text in <pre>. URLs are built here with their
query strings encoded, never by pasting values into templates.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Mapping
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlencode

import jinja2
import orjson
from fastapi import Request
from fastapi.responses import HTMLResponse, Response

from ...analytics.text import to_csv
from ...version import __version__

HERE = Path(__file__).parent
STATIC = HERE / "static"

# No inline script or style anywhere (scripts and CSS are files under /ui/static); figures
# come as data: images; nothing is fetched from anywhere but this server.
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                           "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
SECURITY_HEADERS = {"Content-Security-Policy": CONTENT_SECURITY_POLICY, "X-Content-Type-Options": "nosniff",
                    "Referrer-Policy": "same-origin", "X-Frame-Options": "DENY", "Cache-Control": "no-store"}
MEDIA_TYPES = {"csv": "text/csv; charset=utf-8", "parquet": "application/vnd.apache.parquet",
               "svg": "image/svg+xml", "png": "image/png", "pdf": "application/pdf"}


def url(path: str, pairs: Iterable[tuple[str, Any]] | Mapping[str, Any] | None = None, **params: Any) -> str:
    """`path` with its query string encoded; empty values are left out."""
    items = list(pairs.items() if isinstance(pairs, Mapping) else pairs or []) + list(params.items())
    query = urlencode([(k, v) for k, v in items if v is not None and v != ""])
    return f"{path}?{query}" if query else path


def cell(value: Any) -> str:
    """One table cell as text: what a CSV reader would see, floats shortened to 6 digits."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}" if math.isfinite(value) else str(value)
    if isinstance(value, Decimal):
        return f"{float(value):.6g}"
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (date, time, timedelta)):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "\\x" + bytes(value).hex()
    if isinstance(value, (dict, list, tuple)):
        return orjson.dumps(value, default=str).decode()
    return str(value)


class Cell(NamedTuple):
    text: str
    number: bool  # right-aligned
    title: str  # the value in full, where `text` rounds it
    null: bool = False


def table_cells(rows: list[tuple]) -> list[list[Cell]]:
    """A result's rows as table cells: numbers right-aligned, each column of fractions with one
    number of decimals (three significant digits of its largest value, at most 6 decimals), so
    73.3333 reads 73.3 and a column's decimals line up; the exact value is the cell's title."""
    decimals = [_decimals([row[i] for row in rows]) for i in range(len(rows[0]))] if rows else []
    return [[_cell(value, places) for value, places in zip(row, decimals)] for row in rows]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def _decimals(column: list[Any]) -> int | None:
    fractions = [abs(float(v)) for v in column if isinstance(v, (float, Decimal)) and math.isfinite(float(v))]
    if not fractions or all(v.is_integer() for v in fractions):
        return 0 if fractions else None
    top = max(fractions)
    return min(max(2 - math.floor(math.log10(top)), 0), 6) if top > 0 else 0


def _cell(value: Any, places: int | None) -> Cell:
    exact = cell(value)
    if isinstance(value, (float, Decimal)) and places is not None and math.isfinite(float(value)):
        return Cell(f"{float(value):.{places}f}", True, exact)
    return Cell(exact, _is_number(value), "", value is None)


def usd(value: float | None) -> str:
    return "" if value is None else f"${value:,.4f}"


def count(value: int | None) -> str:
    return "" if value is None else f"{value:,}"


def score(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def seconds(value: float | None) -> str:
    if value is None:
        return ""
    if value < 60:
        return f"{value:.2f} s"
    minutes, rest = divmod(round(value), 60)
    if minutes >= 24 * 60:
        return f"{minutes // 1440} d {minutes // 60 % 24:02d} h"
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min {rest:02d} s"


def signed_seconds(value: float) -> str:
    """A clock jump: +8 d 01 h, −3 d 00 h."""
    return ("+" if value >= 0 else "−") + seconds(abs(value))


def when(value: datetime | None) -> str:
    return "" if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def span(first: datetime | None, last: datetime | None) -> str:
    """A time span as 'start (duration)'."""
    if first is None:
        return ""
    return when(first) + (f" ({seconds((last - first).total_seconds())})" if last is not None else "")


def pretty_json(value: Any) -> str:
    """A payload (JSON text or value) indented for reading; shown as escaped text."""
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return orjson.dumps(value, option=orjson.OPT_INDENT_2, default=str).decode()


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.globals |= {"url": url, "tracewh_version": __version__, "table_cells": table_cells}
    env.filters |= {"cell": cell, "usd": usd, "count": count, "score": score, "seconds": seconds, "signed_seconds": signed_seconds, "when": when,
                    "pretty_json": pretty_json}
    env.globals["span"] = span
    return env


ENVIRONMENT = _environment()


def render(template: str, **context: Any) -> str:
    return ENVIRONMENT.get_template(template).render(**context)


def page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """A whole page, or a fragment (templates named _*.html), with the security headers."""
    html = render(template, request=request, sign_in_on=getattr(request.state, "sign_in_on", False), **context)
    return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)


def is_htmx(request: Request) -> bool:
    return request.headers.get("HX-Request") == "true"


def download(content: bytes, name: str, fmt: str) -> Response:
    """A file the browser saves (never shows): `name` is ours, made of checked names only."""
    headers = SECURITY_HEADERS | {"Content-Disposition": f'attachment; filename="{name}.{fmt}"'}
    return Response(content, media_type=MEDIA_TYPES[fmt], headers=headers)


def table_bytes(result: Any, fmt: str) -> bytes:
    """A QueryResult as CSV (as the JSON endpoints write it) or Parquet bytes."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        sink = io.BytesIO()
        pq.write_table(result.table, sink)
        return sink.getvalue()
    return to_csv(result.columns, result.tuples()).encode()
