"""tracewh releases (`tracewh-release/1`, docs/release.md): the folders `tracewh release` writes,
read back with their events' own ids, so a second ingest, or an ingest into the store they came
from, adds nothing.

records.py recognises a release by its croissant.json and groups its Parquet shards (one group
each, so staging workers read a large release side by side) and reads a shard's rows a record
batch at a time, checking its columns against the event schema; events.py hands those rows to
the pipeline as Arrow columns (EventBatch), or as events one by one where a check declines.
A release's README.md and views/ are claimed and not read: the views are computed again from
the events, as for any store.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...context import AdapterContext
from ...sources import SourceFile
from ..base import EventBatch, Group, Located
from . import records


class ReleaseAdapter:
    name = "release"
    description = "tracewh release folders (croissant.json + events/*.parquet, written by `tracewh release`)"

    def sniff(self, file: SourceFile, ctx: AdapterContext) -> str | None:
        return records.NAME if records.is_release_metadata(file, ctx) else None

    def groups(self, files: list[SourceFile], ctx: AdapterContext) -> list[Group]:
        return records.groups(files, ctx)

    def events(self, group: Group, ctx: AdapterContext) -> Iterator[Located | EventBatch]:
        from . import events  # the mapping: imported once a group of this format is read (base.py)
        for file in group.files:
            if records.is_shard(file.name, group.detail):
                yield from events.events(file, ctx)
            else:  # read at discovery (croissant.json) or not at all: done as far as progress goes
                ctx.progress(file.stored_bytes)


ADAPTER = ReleaseAdapter()
