"""The physical reference every ingest is compared with: the same files, every record parsed with
orjson and written as zstd Parquet by pyarrow, one row per record, no validation or derivation.

Run in-process by run.py for the throughput rows, and as a process of its own (interpreter
start and imports included, as `tracewh ingest` pays them) for the tiny-file row:

    python bench/reference.py OUT.parquet FILE_OR_FOLDER...

It imports only orjson and pyarrow, so that process costs what such a script costs.
"""

from __future__ import annotations

import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

ROWS_PER_WRITE = 64_000


def data_files(paths: list[Path]) -> Iterator[Path]:
    for path in paths:
        yield from (sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path])


def reference_ingest(paths: list[Path], out: Path) -> tuple[float, int]:
    """(seconds, records): every record parsed (orjson) and written as zstd Parquet (pyarrow)."""
    schema = pa.schema([("file", pa.string()), ("line", pa.int64()), ("record", pa.string())])
    started, records = time.perf_counter(), 0
    with pq.ParquetWriter(out, schema, compression="zstd") as writer:
        files, lines, texts = [], [], []
        for name, number, record in _records(paths):
            files.append(name), lines.append(number), texts.append(record)
            if len(texts) >= ROWS_PER_WRITE:
                writer.write_table(pa.table([files, lines, texts], schema=schema))
                records += len(texts)
                files, lines, texts = [], [], []
        writer.write_table(pa.table([files, lines, texts], schema=schema))
        records += len(texts)
    return time.perf_counter() - started, records


def _records(paths: list[Path]) -> Iterator[tuple[str, int, str]]:
    for path in data_files(paths):
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as z:
                for info in z.infolist():
                    with z.open(info) as f:
                        yield from _parse(info.filename, f)
        else:
            with open(path, "rb") as f:
                yield from _parse(str(path), f)


def _parse(name: str, stream: Any) -> Iterator[tuple[str, int, str]]:
    if name.endswith(".jsonl"):
        for number, line in enumerate(stream, 1):
            yield name, number, orjson.dumps(orjson.loads(line)).decode()
    elif name.endswith(".json"):
        yield name, 1, orjson.dumps(orjson.loads(stream.read())).decode()
    else:
        yield name, 1, stream.read().decode(errors="replace")


if __name__ == "__main__":
    reference_ingest([Path(p) for p in sys.argv[2:]], Path(sys.argv[1]))
