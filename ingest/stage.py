"""Staging: a source's events converted, checked and written to Parquet part files, a chunk at a time.

The pipeline (pipeline.py) stages a source here in its own process, or hands its groups to
worker processes (workers.py), which stage each job (a run of neighbouring groups) into a part
file of its own with the same StagingWriter. Either way the part files, read in name order,
hold the batch's events in reading order.

bulk.py (whole-column conversion) is imported where it is used: with it comes pyarrow.compute,
29 ms of imports, which a small ingest (chunks of fewer than BULK_MIN_EVENTS, converted one event
at a time) does without.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from datetime import datetime, timezone
from itertools import repeat
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import BadInputError
from ..schema import ARROW_SCHEMA, COLUMNS, PARTITION_COLUMNS, SCHEMA_VERSION, event_id, line_event_ids
from .adapters import Adapter, EventBatch, Group
from .context import AdapterContext
from .rows import Where, convert
from .sources import SourceFile

ROWS_PER_GROUP = 64_000
# Chunks of fewer events are converted one event at a time (rows.convert): as fast as in bulk
# (2.0 ms either way at 256 events; 0.35 ms against 0.97 at 31), and with the same result.
BULK_MIN_EVENTS = 256
RUN_LEVEL_COLUMNS = ("model",)  # `--attr model=X` fills these where a source left them empty


def arrow_without_pandas() -> None:
    """Let pyarrow convert Python values without importing pandas: 0.26 s, more than staging a
    small archive takes. pyarrow imports pandas at its first conversion of Python values, to
    recognise pandas objects, which staging never hands it. Made while `import pandas` fails,
    that first conversion leaves pyarrow taking pandas as absent; a pandas feature asked for
    later (to_pandas(), for the great-expectations gate) imports it then, and from then on
    pyarrow knows pandas objects again. Only in processes tracewh owns: the CLI and the
    staging workers. Nothing to do once pandas is imported (a user's process may have)."""
    if "pandas" in sys.modules:
        return
    refusal = _NoPandas()
    sys.meta_path.insert(0, refusal)
    try:
        pa.array([0])
    finally:
        sys.meta_path.remove(refusal)


class _NoPandas:
    """An import finder that refuses pandas."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "pandas":
            raise ModuleNotFoundError("not imported while pyarrow first converts", name="pandas")


def stage_group(writer: StagingWriter, adapter: Adapter, group: Group, ctx: AdapterContext) -> None:
    """The group's events, as its adapter reads them, into `writer`."""
    try:
        for item in adapter.events(group, ctx):
            if isinstance(item, EventBatch):
                writer.add_batch(item)
            else:
                file, line, event = item
                writer.add(event, file, line)
    except BadInputError:
        # An event read before the adapter met this error may be refused first, as when every
        # event was converted the moment it was read: the earlier error is the one reported.
        writer.flush()
        raise


def part_name(part: int) -> str:
    return f"part-{part:08d}.parquet"  # in name order, the batch's reading order


class StagingWriter:
    """Fills envelope defaults, then converts and validates events a chunk at a time and writes
    them to a staging Parquet file: whole columns at once (bulk.py), or one event at a time
    (rows.convert) for a small chunk and for one the bulk conversion declines, which names any
    bad field."""

    def __init__(self, folder: Path, digest: str, batch_id: str, attrs: dict[str, str], part: int = 0,
                 chunk: int = ROWS_PER_GROUP):
        self.digest, self.batch_id, self.attrs, self.chunk = digest, batch_id, attrs, chunk
        self.defaults = {k: v for k, v in attrs.items() if k in RUN_LEVEL_COLUMNS}
        # lz4, not zstd: the gate, the dedup and the data-file writes each read the part files
        # again, and decode lz4 four to five times as fast; the 1.7M-event native ingest took
        # 0.6-1.0 s less, for staging files twice the size (they are removed after the commit).
        # Statistics of the partition columns only: the data-file writes select a partition's
        # rows by them, skipping row groups of other kinds; of every column they were a fifth
        # of the write's time.
        self.writer = pq.ParquetWriter(folder / part_name(part), ARROW_SCHEMA, compression="lz4",
                                       write_statistics=list(PARTITION_COLUMNS))
        self.pending: list[dict[str, Any]] = []
        self.where: list[Where] = []  # of each pending event, for errors
        self.runs: dict[str, str] = {}  # run_id -> benchmark, for run_attrs events
        self.rows = 0
        self._last: tuple[str, int] | None = None
        self._sub = 0

    def add(self, event: dict[str, Any], file: SourceFile, line: int) -> None:
        self._sub = self._sub + 1 if self._last == (file.name, line) else 0
        self._last = (file.name, line)
        if "event_id" not in event:  # not setdefault: the id is a hash, computed only when needed
            event["event_id"] = event_id(self.digest, file.name, line, self._sub)
        if "batch_id" not in event:
            event["batch_id"] = self.batch_id
        if "source" not in event:
            event["source"] = f"{file.name}:{line}"
        for column, value in self.defaults.items():
            if event.get(column) is None:
                event[column] = value
        self.pending.append(event)
        self.where.append(Where(file.display, line))
        if len(self.pending) >= self.chunk:
            self.flush()

    def add_run_attrs(self) -> None:
        """One run_attrs event per run seen, carrying `--attr` values."""
        if not self.attrs:
            return
        self.flush()
        now = datetime.now(timezone.utc)  # attributes attached now; later ones win in `runs`
        for run_id, benchmark in self.runs.items():
            self.pending.append({
                "event_id": event_id(self.digest, "run_attrs", run_id, json.dumps(self.attrs, sort_keys=True)),
                "batch_id": self.batch_id, "run_id": run_id, "benchmark": benchmark, "kind": "run_attrs", "seq": 0,
                "ts": now, "payload": dict(self.attrs), "source": "--attr"})
            self.where.append(Where("--attr", None))
        self.flush()

    def add_batch(self, batch: EventBatch) -> None:
        """Events an adapter gives as columns (adapters/base.py): defaults filled and envelope
        checked a column at a time; a batch the checks decline goes through add() one by one."""
        from .bulk import Irregular

        self.flush()  # events added before come first
        at = _Locations(batch)
        if not at.count:
            return
        try:
            if at.first() == self._last:  # the line goes on from the last event: add() numbers it
                raise Irregular("line continues")
            columns = self._filled(batch, at)
        except Irregular:
            for file, line, event in batch.per_record():
                self.add(event, file, line)
            return
        self._write(columns)
        self._last, self._sub = at.last()

    def _filled(self, batch: EventBatch, at: _Locations) -> pa.RecordBatch:
        """add()'s defaults and convert()'s envelope checks, for columns."""
        import pyarrow.compute as pc

        from . import bulk

        given, n = batch.columns, batch.columns.num_rows
        arrays = {c.name: given.column(c.name) if c.name in given.schema.names else pa.nulls(n, c.type)
                  for c in COLUMNS}
        if wrong := [c.name for c in COLUMNS if arrays[c.name].type != c.type]:
            raise TypeError(f"{batch.file.display}: the adapter gave columns {wrong} in other types than the schema's")
        ids = arrays["event_id"]
        if ids.null_count:
            made = pa.array(line_event_ids(self.digest, *at.each()), pa.string())
            arrays["event_id"] = pc.coalesce(ids, made) if ids.null_count < n else made
        sources = pc.binary_join_element_wise(at.names, at.lines.cast(pa.string()), ":")
        arrays["source"] = pc.coalesce(arrays["source"], sources)
        arrays["batch_id"] = pc.coalesce(arrays["batch_id"], pa.scalar(self.batch_id))
        for column, value in self.defaults.items():
            arrays[column] = pc.coalesce(arrays[column], pa.scalar(value))
        arrays["schema_version"] = pc.coalesce(arrays["schema_version"], pa.scalar(SCHEMA_VERSION, pa.int32()))
        bulk.check_envelope(arrays)
        return pa.RecordBatch.from_arrays(list(arrays.values()), schema=ARROW_SCHEMA)

    def flush(self) -> None:
        """Convert and write the pending events (raises the first bad event's error)."""
        if not self.pending:
            return
        batch = self._converted()
        self.pending, self.where = [], []
        self._write(batch)

    def _converted(self) -> pa.RecordBatch:
        """The pending events in bulk, or one by one: a small chunk, or one the bulk conversion declines."""
        if len(self.pending) >= BULK_MIN_EVENTS:
            from . import bulk

            try:
                return bulk.convert_batch(self.pending)
            except bulk.Irregular:
                pass
        return pa.RecordBatch.from_pylist([convert(e, w) for e, w in zip(self.pending, self.where)], schema=ARROW_SCHEMA)

    def _write(self, batch: pa.RecordBatch) -> None:
        if self.attrs:
            for run_id, benchmark in zip(batch.column("run_id").to_pylist(), batch.column("benchmark").to_pylist()):
                self.runs.setdefault(run_id, benchmark)
        self.writer.write_batch(batch)
        self.rows += batch.num_rows

    def close(self) -> None:
        self.flush()
        self.writer.close()


class _Locations:
    """Where each event of an EventBatch comes from: (file name, line, number on the line)."""

    def __init__(self, batch: EventBatch):
        given = batch.columns
        self.count, self.lines = given.num_rows, given.column("line")
        self.names = given.column("file") if "file" in given.schema.names else pa.scalar(batch.file.name)
        self.subs = given.column("sub") if "sub" in given.schema.names else None

    def each(self) -> tuple[Iterable[str], list[int], Iterable[int]]:
        names = self.names.to_pylist() if isinstance(self.names, pa.Array) else repeat(self.names.as_py())
        return names, self.lines.to_pylist(), repeat(0) if self.subs is None else self.subs.to_pylist()

    def first(self) -> tuple[str, int]:
        return self._name(0), self.lines[0].as_py()

    def last(self) -> tuple[tuple[str, int], int]:
        """((file name, line), number on the line) of the last event, as add() keeps them."""
        sub = 0 if self.subs is None else self.subs[-1].as_py()
        return (self._name(-1), self.lines[-1].as_py()), sub

    def _name(self, i: int) -> str:
        return (self.names[i] if isinstance(self.names, pa.Array) else self.names).as_py()
