"""Rows into Parquet shards: zstd, at most `rows_per_shard` rows a file, small row groups.

Rows arrive as a stream of Arrow batches (a DuckDB reader) and leave a batch at a time: a
release of any size holds one batch in memory. Row groups of ROW_GROUP_ROWS keep a reader that
pages through a shard (the Hugging Face viewer, `datasets` streaming) from decoding more than it
shows; every shard's footer names the release format (FORMAT), which `tracewh ingest` reads.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ...schema.release import FOOTER_KEY, FORMAT

SHARD_ROWS = 200_000
ROW_GROUP_ROWS = 10_000
READ_ROWS = 8_192  # rows fetched from DuckDB at a time


@dataclass(frozen=True)
class Shard:
    path: str  # inside the release folder, '/'-separated: events/part-00000.parquet
    rows: int
    bytes: int
    sha256: str


def write_shards(batches: Iterable[pa.RecordBatch], schema: pa.Schema, folder: Path, prefix: str,
                 footer: dict[str, object], rows_per_shard: int = SHARD_ROWS,
                 transform: Callable[[pa.RecordBatch], pa.RecordBatch] | None = None) -> list[Shard]:
    """Write the batches (cast to `schema`, through `transform` first) as `prefix`part-NNNNN.parquet
    under `folder`. No rows still writes one empty shard: a reader of the folder finds the schema."""
    schema = schema.with_metadata({FOOTER_KEY: json.dumps({"format": FORMAT, **footer}, sort_keys=True).encode()})
    shards: list[Shard] = []
    writer: _ShardWriter | None = None
    for batch in batches:
        batch = transform(batch) if transform is not None else batch
        batch = batch.cast(schema) if batch.schema != schema else batch
        while batch.num_rows:
            if writer is None:
                writer = _ShardWriter(folder, f"{prefix}part-{len(shards):05d}.parquet", schema)
            taken = min(batch.num_rows, rows_per_shard - writer.rows)
            writer.write(batch.slice(0, taken))
            batch = batch.slice(taken)
            if writer.rows == rows_per_shard:
                shards.append(writer.close())
                writer = None
    if writer is not None or not shards:
        shards.append((writer or _ShardWriter(folder, f"{prefix}part-00000.parquet", schema)).close())
    return shards


class _ShardWriter:
    def __init__(self, folder: Path, name: str, schema: pa.Schema):
        self.name, self.path, self.rows = name, folder / name, 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.writer = pq.ParquetWriter(self.path, schema, compression="zstd")

    def write(self, batch: pa.RecordBatch) -> None:
        self.writer.write_batch(batch, row_group_size=ROW_GROUP_ROWS)
        self.rows += batch.num_rows

    def close(self) -> Shard:
        self.writer.close()
        return Shard(self.name, self.rows, self.path.stat().st_size, file_sha256(self.path))


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def content_digest(shards: Iterable[Shard]) -> str:
    """sha256 of the shards' `sha256sum` listing, so a reader can check it with
    `sha256sum events/*.parquet | sha256sum` in the release folder."""
    listing = "".join(f"{s.sha256}  {s.path}\n" for s in shards)
    return hashlib.sha256(listing.encode()).hexdigest()
