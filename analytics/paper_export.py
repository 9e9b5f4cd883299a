"""Tables for papers: a view or query, optionally pivoted, rendered as csv, json, markdown, latex or parquet.

Every export carries its provenance (tracewh version, store version, query, time) so a
number in a paper can be traced back and re-made with `--as-of`: a comment line in text
formats, a "provenance" object in JSON, key-value metadata in Parquet. The time honours
SOURCE_DATE_EPOCH, for reproducible builds.
"""

from __future__ import annotations

import io
import json
import math
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq

from ..errors import UsageError
from ..version import __version__
from ..warehouse.sqltext import literal
from . import Queryable

FORMATS = ("csv", "json", "markdown", "latex", "parquet")
LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


@dataclass(frozen=True)
class TableOptions:
    pivot: str | None = None  # column whose values become columns
    value: str | None = None  # column that fills the pivoted cells
    decimals: int | None = None
    scale: float | None = None  # multiply the floating-point columns (e.g. 100 for points)
    bold: str | None = None  # max | min: best value per numeric column (LaTeX, markdown)
    caption: str | None = None
    label: str | None = None


def export_query(target: str, where: str | None = None) -> str:
    """The query behind an export of `target`: a view's rows (filtered by `where`) in one stable
    order, every column ascending. Views define no order of their own, so without it rows came
    as DuckDB's hash aggregation left them (RS@k with k = 4 before k = 2); it is the order
    GET /views/{name} and the web page show. A `target` with a space is a query, kept as written."""
    if " " in target.strip():
        return f"select * from ({target}) where {where}" if where else target
    return f"select * from {target}" + (f" where {where}" if where else "") + " order by all"


def pivoted(wh: Queryable, query: str, pivot: str, value: str) -> str:
    """PIVOT with the column values listed in order (numeric order for numbers, not text order)."""
    values = sorted({row[0] for row in wh.sql(f"select distinct {pivot} from ({query}) where {pivot} is not null").fetchall()})
    listing = ", ".join(literal(v) if isinstance(v, str) else str(v) for v in values)
    others = [c for c in wh.sql(f"select * from ({query}) limit 0").columns if c not in (pivot, value)]
    grouped = f" group by {', '.join(others)} order by {', '.join(others)}" if others else ""
    return f"pivot ({query}) on {pivot} in ({listing}) using first({value}){grouped}"


def provenance(wh: Queryable, query: str) -> dict[str, str]:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = datetime.fromtimestamp(int(epoch), timezone.utc) if epoch else datetime.now(timezone.utc)
    return {"tracewh_version": __version__, "store_version": str(wh.version), "query": " ".join(query.split()),
            "exported_at": when.isoformat(timespec="seconds")}


def table_for(wh: Queryable, query: str, options: TableOptions) -> tuple[pl.DataFrame, str]:
    if options.pivot:
        if not options.value:
            raise UsageError("--pivot needs --value: the column that fills the cells")
        query = pivoted(wh, query, options.pivot, options.value)
    frame = wh.sql(query).pl()
    floats = [c for c, t in frame.schema.items() if t.is_float() or t.is_decimal()]  # counts and ids stay as they are
    if options.scale is not None:
        frame = frame.with_columns(pl.col(floats).cast(pl.Float64) * options.scale)
    if options.decimals is not None:
        frame = frame.with_columns(pl.col(floats).cast(pl.Float64).round(options.decimals))
    return frame, query


def render(frame: pl.DataFrame, fmt: str, options: TableOptions, meta: dict[str, str]) -> bytes:
    comment = f"tracewh export: {json.dumps(meta)}"
    if fmt == "csv":
        return f"# {comment}\n{frame.write_csv()}".encode()
    if fmt == "json":
        return json.dumps({"provenance": meta, "rows": frame.to_dicts()}, default=str, indent=1).encode() + b"\n"
    if fmt == "markdown":
        return f"<!-- {comment} -->\n{markdown(frame, options)}".encode()
    if fmt == "latex":
        return f"% {comment}\n{latex(frame, options)}".encode()
    if fmt == "parquet":
        table = frame.to_arrow()
        table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                               **{f"tracewh.{k}".encode(): v.encode() for k, v in meta.items()}})
        sink = io.BytesIO()
        pq.write_table(table, sink, compression="zstd")
        return sink.getvalue()
    raise UsageError(f"format {fmt!r}: choose one of {', '.join(FORMATS)}")


def _best(frame: pl.DataFrame, bold: str | None) -> dict[str, Any]:
    if bold not in ("max", "min"):
        return {}
    floats = [c for c, t in frame.schema.items() if t.is_float()]  # measures, not counts
    pick = max if bold == "max" else min
    return {c: pick(vals) for c in floats if (vals := [v for v in frame[c].to_list() if v is not None and not
                                                         (isinstance(v, float) and math.isnan(v))])}


def _cell(value: Any, decimals: int | None) -> str:
    if value is None:
        return "--"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and decimals is not None:
        return f"{value:.{decimals}f}"
    return str(value)


def markdown(frame: pl.DataFrame, options: TableOptions) -> str:
    best = _best(frame, options.bold)
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "|".join("---:" if frame.schema[c].is_numeric() else "---" for c in frame.columns) + "|"
    rows = ["| " + " | ".join((f"**{_cell(v, options.decimals)}**" if c in best and v == best[c] else _cell(v, options.decimals))
                              for c, v in row.items()) + " |" for row in frame.iter_rows(named=True)]
    caption = [f"\n*{options.caption}*"] if options.caption else []
    return "\n".join([head, rule, *rows, *caption]) + "\n"


def latex_escape(text: str) -> str:
    return "".join(LATEX_SPECIALS.get(ch, ch) for ch in text)


def latex(frame: pl.DataFrame, options: TableOptions) -> str:
    """A booktabs table environment."""
    best = _best(frame, options.bold)
    align = "".join("r" if frame.schema[c].is_numeric() else "l" for c in frame.columns)
    lines = [r"\begin{table}[t]", r"\centering"]
    if options.caption:
        lines.append(rf"\caption{{{latex_escape(options.caption)}}}")
    if options.label:
        lines.append(rf"\label{{{options.label}}}")
    lines += [rf"\begin{{tabular}}{{{align}}}", r"\toprule",
              " & ".join(latex_escape(str(c)) for c in frame.columns) + r" \\", r"\midrule"]
    for row in frame.iter_rows(named=True):
        cells = [latex_escape(_cell(v, options.decimals)) for v in row.values()]
        cells = [rf"\textbf{{{cell}}}" if c in best and row[c] == best[c] else cell for c, cell in zip(row, cells)]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def export(wh: Queryable, query: str, fmt: str, options: TableOptions, out: Path | None) -> bytes:
    """Render and (when `out` is given) write the table; returns the bytes."""
    frame, final_query = table_for(wh, query, options)
    data = render(frame, fmt, options, provenance(wh, final_query))
    if out is not None:
        out.write_bytes(data)
    return data
