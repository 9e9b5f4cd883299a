"""A batch's new events written as the Delta table's data files, and the add actions that commit them.

DuckDB writes the files (COPY ... RETURN_STATS, by benchmark and kind): streamed under the
batch connection's memory limit, on every core, in the table's layout
(benchmark=<b>/kind=<k>/part-<uuid>.zstd.parquet, zstd, 16k-row groups, files of up to 16 MB).
delta-rs then commits them as one transaction (store.py). delta-rs's own writer did both
and held memory that grew with the batch: +0.5 GB at 4.6M events, +1 GB at 13.7M.

The files are written inside the batch's staging folder and renamed into the table only
once all are written, so a failed write leaves the table as it was; a process killed
between the renames and the commit leaves files no commit lists, which a writer removes at its
first commit and a long-lived writer once a minute (Store.remove_orphans).
"""

from __future__ import annotations

import json
import math
import os
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
from deltalake.transaction import AddAction

from ..errors import StoreError
from ..schema import ARROW_SCHEMA, BENCHMARK_NAME, PARTITION_COLUMNS
from .sqltext import literal, literal_list

TARGET_FILE_BYTES = 16 << 20  # the writer keeps a file open per partition: these bound its memory
ROW_GROUP_ROWS = 16_000
ZSTD_LEVEL = 1
MAX_STRING_BOUND = 64  # characters
ONE_COPY_ROWS = 500_000
SMALL_PARTITION_ROWS = 64_000
WRITTEN = "data-files"  # inside the staging folder, until renamed into the table


def write_data_files(con: duckdb.DuckDBPyConnection, files: list[Path], partitions: list[tuple[str, str, int]],
                     staged: Path, table_path: Path) -> list[AddAction]:
    """Write the rows of `files` (Parquet in the event schema, `partitions` their (benchmark, kind,
    rows), as the dedup counted them) into the table's folders; the add actions that make them
    part of the table, for one commit."""
    scan, out = f"read_parquet({literal_list(files)})", staged / WRITTEN
    folders = {(b, k): f"benchmark={_safe(b)}/kind={_safe(k)}" for b, k, _ in partitions}
    # A batch of up to ONE_COPY_ROWS in one partitioned COPY. In a larger one, the partitions of
    # up to SMALL_PARTITION_ROWS in one partitioned COPY, each other in a COPY of its own. DuckDB's
    # partitioned write took 1.6x as long as a COPY a partition on 1.5M events, and 0.23 GB more
    # memory with DecisionBench's 420k tool calls in it; but each COPY scans the whole batch,
    # which for a partition of a few rows is all its cost: DecisionBench's six small kinds took
    # 0.72 s one by one, 0.2 s in one (and eight COPYs 1.5x as long as one on 12k events).
    whole = sum(n for *_, n in partitions) <= ONE_COPY_ROWS
    together = [(b, k) for b, k, n in partitions if whole or n <= SMALL_PARTITION_ROWS]
    alone = [(b, k) for b, k, _ in partitions if (b, k) not in together]
    written = []
    if together:
        wanted = " or ".join(f"(benchmark = {literal(b)} and kind = {literal(k)})" for b, k in together)
        where = "" if not alone else f" where {wanted}"
        written += _copy(con, f"select * from {scan}{where}", out, f"partition_by ({', '.join(PARTITION_COLUMNS)}), ")
    for benchmark, kind in sorted(alone):
        folder = folders[benchmark, kind]
        (out / folder).parent.mkdir(parents=True, exist_ok=True)  # COPY makes the last folder only
        written += _copy(con, f"select * exclude ({', '.join(PARTITION_COLUMNS)}) from {scan} "
                              f"where benchmark = {literal(benchmark)} and kind = {literal(kind)}", out / folder)
    now_ms = int(time.time() * 1000)
    actions = []
    for name, rows, size, _footer, columns, _keys, _extra in written:
        path = Path(name).relative_to(out)
        values = dict(part.split("=", 1) for part in path.parent.parts)  # the folders made above
        actions.append(AddAction(path=path.as_posix(), size=size, partition_values=values, modification_time=now_ms,
                                 data_change=True, stats=_stats(rows, columns)))
    for action in actions:
        _move_in(out / action.path, table_path / action.path)
    return actions


def _copy(con: duckdb.DuckDBPyConnection, select: str, target: Path, partitioning: str = "") -> list[tuple]:
    """The files a COPY of `select` wrote under `target`, with their statistics."""
    # zstd level 1: on 1.7M native events, 10% less time than DuckDB's default level (2.55 s
    # against 2.85) and 4% smaller files; reading them back is as fast.
    return con.sql(f"""
        copy ({select}) to {literal(target)}
        (format parquet, compression zstd, compression_level {ZSTD_LEVEL}, {partitioning}row_group_size {ROW_GROUP_ROWS},
         file_size_bytes {TARGET_FILE_BYTES}, filename_pattern 'part-{{uuid}}', file_extension 'zstd.parquet',
         return_stats)""").fetchall()


def _safe(value: str) -> str:
    """A partition value as a folder name: the ingest admits only such benchmarks and kinds;
    checked again here, as a path is made of it."""
    if not BENCHMARK_NAME.match(value):
        raise StoreError(f"{value!r} cannot name a partition folder; nothing was committed")
    return value


def _move_in(written: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():  # a uuid name: never, but a rename would replace a committed file
        raise StoreError(f"{target} exists already; nothing was committed")
    os.rename(written, target)


# ------------------------------------------------------------------------- statistics
def _stats(rows: int, columns: dict[str, dict[str, str]]) -> str:
    """Delta's per-file statistics (numRecords, nullCount, minValues, maxValues), which readers
    use to skip files (Spark, delta-rs). Bounds are given only where DuckDB says they are exact,
    and for times widened to whole milliseconds, so no reader can skip a file it needs."""
    nulls, low, high = {}, {}, {}
    for quoted, s in columns.items():
        name = quoted.strip('"')
        if name not in _TYPES:
            continue
        nulls[name] = int(s["null_count"])
        if "min" in s and "max" in s and s.get("min_is_exact") == "true" and s.get("max_is_exact") == "true":
            bounds = _bounds(_TYPES[name], s["min"], s["max"])
            if bounds is not None:
                low[name], high[name] = bounds
    return json.dumps({"numRecords": rows, "minValues": low, "maxValues": high, "nullCount": nulls},
                      separators=(",", ":"))


def _bounds(kind: pa.DataType, low: str, high: str) -> tuple[Any, Any] | None:
    if pa.types.is_integer(kind):
        return int(low), int(high)
    if pa.types.is_string(kind):  # short ones only: a payload's would copy it into the log
        return (low, high) if max(len(low), len(high)) <= MAX_STRING_BOUND else None
    if pa.types.is_timestamp(kind):
        return _millis(datetime.fromisoformat(low), math.floor), _millis(datetime.fromisoformat(high), math.ceil)
    return None  # floats: no bound is worth NaN's and rounding's questions


def _millis(when: datetime, rounding: Any) -> str:
    when = when.astimezone(timezone.utc)
    ms = rounding(when.microsecond / 1000)
    whole = when.replace(microsecond=0) + timedelta(milliseconds=ms)
    return whole.strftime("%Y-%m-%dT%H:%M:%S.") + f"{whole.microsecond // 1000:03d}Z"


_TYPES = {f.name: f.type for f in ARROW_SCHEMA if f.name not in PARTITION_COLUMNS}
