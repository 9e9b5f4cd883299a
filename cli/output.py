"""Render query results for the terminal and for papers: table, csv, json, markdown."""

from __future__ import annotations

import enum

import polars as pl
import pyarrow as pa


class Format(str, enum.Enum):
    table = "table"
    csv = "csv"
    json = "json"
    markdown = "markdown"


def render(result: pa.Table, fmt: Format) -> str:
    frame = pl.from_arrow(result)
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
