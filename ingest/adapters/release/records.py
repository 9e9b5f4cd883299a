"""Which files make a release, and the rows of its Parquet shards, checked against the event schema.

A release is recognised by its metadata file (schema/release.py METADATA): Croissant 1.0 whose
`events` record set has the event schema's required columns. Its shards are the Parquet files
of the `events/` folder beside it. A shard is read a record batch at a time (never whole); one
that is not Parquet, not a release's (no FORMAT in its footer), or whose columns are not the
schema's (a column unknown, a required one missing, another type) is refused, naming the file
and the column.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from ....errors import BadInputError
from ....schema import COLUMNS
from ....schema.release import CARD, CROISSANT_1_0, EVENTS, FOOTER_KEY, FORMAT, METADATA, VIEWS
from ...context import AdapterContext
from ...jsonlines import read_json_file
from ...sources import SourceFile
from ..base import Group

NAME = "release"  # the format `tracewh log` shows (its version is in each shard's footer)
BATCH_ROWS = 64_000  # as staging converts them (stage.ROWS_PER_GROUP)
METADATA_BYTES = 64 << 20
SCHEMA = {c.name: c for c in COLUMNS}
REQUIRED = frozenset(c.name for c in COLUMNS if c.required)


def is_release_metadata(file: SourceFile, ctx: AdapterContext) -> bool:
    if file.name != METADATA and not file.name.endswith("/" + METADATA):
        return False
    try:
        document = read_json_file(file, min(ctx.limits.max_line_bytes, METADATA_BYTES))
    except BadInputError:
        return False
    if not isinstance(document, dict) or document.get("conformsTo") != CROISSANT_1_0:
        return False
    record_sets = document.get("recordSet")
    for record_set in record_sets if isinstance(record_sets, list) else []:
        if isinstance(record_set, dict) and record_set.get("@id") == EVENTS:
            fields = record_set.get("field")
            names = {f.get("name") for f in fields if isinstance(f, dict)} if isinstance(fields, list) else set()
            return REQUIRED <= names
    return False


def is_shard(name: str, prefix: str) -> bool:
    """A Parquet file directly in the release's events/ folder."""
    rest = name[len(prefix):] if name.startswith(prefix + EVENTS + "/") else ""
    return rest.count("/") == 1 and rest.endswith(".parquet")


def groups(files: list[SourceFile], ctx: AdapterContext) -> list[Group]:
    """Per release found: its metadata, card, views and first shard as one group, each other shard
    a group of its own. `detail`: the release's folder inside the source ('' or 'a/b/')."""
    found = []
    for metadata in (f for f in files if is_release_metadata(f, ctx)):
        prefix = metadata.name[: -len(METADATA)]
        shards = sorted((f for f in files if is_shard(f.name, prefix)), key=lambda f: f.name)
        if not shards:
            raise BadInputError(metadata.display, f"a tracewh release without its {EVENTS}/*.parquet files")
        extras = [f for f in files if f.name == prefix + CARD or f.name.startswith(prefix + VIEWS + "/")]
        found.append(Group(NAME, [metadata, *extras, shards[0]], prefix))
        found += [Group(NAME, [shard], prefix) for shard in shards[1:]]
    return found


@contextmanager
def parquet_file(file: SourceFile) -> Iterator[pq.ParquetFile]:
    """The shard opened for reading (Parquet needs to seek: a member of a zip is copied out first)."""
    with file.open() as stream, _seekable(file, stream) as seekable:
        try:
            yield pq.ParquetFile(seekable)
        except (pa.ArrowInvalid, OSError) as e:
            raise BadInputError(file.display, f"not a readable Parquet file (truncated or damaged?): {e}") from None


@contextmanager
def _seekable(file: SourceFile, stream: IO[bytes]) -> Iterator[IO[bytes]]:
    if file.seekable:
        yield stream
        return
    with tempfile.TemporaryFile() as copy:
        shutil.copyfileobj(stream, copy, 1 << 20)
        copy.seek(0)
        yield copy


def checked_schema(shard: pq.ParquetFile, file: SourceFile) -> pa.Schema:
    """The shard's Arrow schema, refused unless it is a release shard with the schema's columns."""
    schema = shard.schema_arrow
    try:
        footer = orjson.loads((schema.metadata or {}).get(FOOTER_KEY, b"{}"))
    except orjson.JSONDecodeError:
        footer = None
    if not isinstance(footer, dict) or footer.get("format") != FORMAT:
        raise BadInputError(file.display, f"not a shard of a tracewh release (its footer does not name {FORMAT})")
    for field in schema:
        column = SCHEMA.get(field.name)
        if column is None:
            raise BadInputError(file.display, "unknown column: a release's events have the event schema's columns "
                                "(docs/events.md)", field=field.name)
        if not _same_type(field.type, column.type):
            raise BadInputError(file.display, f"column of type {field.type}; the event schema's is {column.arrow}",
                                field=field.name)
    if missing := sorted(REQUIRED - set(schema.names)):
        raise BadInputError(file.display, "required column is missing", field=missing[0])
    return schema


def _same_type(given: pa.DataType, expected: pa.DataType) -> bool:
    """Equal, or the same values spelled otherwise: large or view strings, a UTC timestamp of another unit."""
    if given == expected:
        return True
    if pa.types.is_string(expected):
        return pa.types.is_large_string(given) or pa.types.is_string_view(given)
    if pa.types.is_timestamp(expected):
        return pa.types.is_timestamp(given) and given.tz in ("UTC", "+00:00", "Etc/UTC", "Z")
    return False


def batches(shard: pq.ParquetFile, file: SourceFile) -> Iterator[pa.RecordBatch]:
    """The shard's rows, a record batch at a time; a file cut short fails here, named."""
    try:
        yield from shard.iter_batches(batch_size=BATCH_ROWS)
    except (pa.ArrowInvalid, OSError) as e:
        raise BadInputError(file.display, f"cannot be read to its end (truncated or damaged?): {e}") from None
