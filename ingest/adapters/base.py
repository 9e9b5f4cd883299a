"""The shape every source adapter has, and the base for formats whose files stand alone.

An adapter turns a source format's raw records into events and nothing else: no ids, no
batch, no defaults, no validation (the pipeline does those for every adapter alike).

    sniff(file, ctx)    -> the format name if the file is one of this adapter's, else None
    groups(files, ctx)  -> the units it reads: one file, or several read together (a run folder)
    events(group, ctx)  -> (file, line or record number, event dict) for every event of a unit,
                           or, for runs of regular records, EventBatch objects: many events as
                           Arrow columns (below), which the pipeline checks a column at a time

Each adapter is one package under ingest/adapters/ laid out the same way:
`__init__.py` (the ADAPTER object and a description of the format, with its
docs/formats/ page), `records.py` (which files it reads and how their raw records come
off them) and `events.py` (raw records -> event dicts); larger formats add modules of
their own beside those. `events.py` is imported when the adapter reads its first group:
discovery asks every adapter about every file, and a small ingest of one format did without
the other formats' mappings (and pyarrow.compute, which some import: 35 ms in all).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..context import AdapterContext
from ..sources import SourceFile, is_data_file

if TYPE_CHECKING:
    import pyarrow as pa

Located = tuple[SourceFile, int, dict[str, Any]]  # (file, line or record number, event)


@dataclass
class EventBatch:
    """Events as Arrow columns: what events() may yield instead of Located tuples where records
    are regular. Native files do, a block of lines of one file at a time, one event per line;
    DecisionBench runs do, a chunk of files at a time, several events per line.

    `columns` holds `line` (int64, each event's line) and any of the schema's event columns, in
    the schema's Arrow types and with the values convert() would give the same record as a dict
    (payload: JSON text with sorted keys; ts: UTC microseconds, rounded as convert() rounds); a
    null stands for a field the record leaves out (the pipeline fills event_id, batch_id, source
    and model as it does for dicts). Events of several files also hold `file` (string: each
    event's file name, as SourceFile.name), and events sharing a line `sub` (int64: 0, 1, ...
    along the line, as the pipeline numbers dicts); without them, every event is `file`'s and
    the only one on its line. The adapter checks what only it can see (JSON types, fields
    present but null where a default would apply) and yields a block it cannot decide on as
    Located dicts instead. `per_record()` reads the same events again as Located dicts: the
    pipeline converts those one by one when its own checks of the columns decline the batch
    (an unknown kind, a missing run_id, ...), so errors name file, line and field as always.
    """

    file: SourceFile  # the (first) file the events come from
    columns: pa.RecordBatch
    per_record: Callable[[], Iterator[Located]]


@dataclass
class Group:
    """Files an adapter reads together as one unit; `format` is what `tracewh log` shows."""

    format: str
    files: list[SourceFile]
    detail: Any = field(default=None, repr=False)  # what discovery learnt, for events()


@runtime_checkable
class Adapter(Protocol):
    name: str  # the source format family, e.g. "delegate52"
    description: str  # one line: which files it reads

    def sniff(self, file: SourceFile, ctx: AdapterContext) -> str | None: ...

    def groups(self, files: list[SourceFile], ctx: AdapterContext) -> list[Group]: ...

    def events(self, group: Group, ctx: AdapterContext) -> Iterator[Located | EventBatch]: ...


class FileAdapter(ABC):
    """For formats where every data file stands alone: a group per file sniff() accepts;
    subclasses give `sniff` and `read(format, file, ctx)` yielding (line, event)."""

    name: str
    description: str

    @abstractmethod
    def sniff(self, file: SourceFile, ctx: AdapterContext) -> str | None: ...

    def groups(self, files: list[SourceFile], ctx: AdapterContext) -> list[Group]:
        return [Group(fmt, [f]) for f in files if is_data_file(f.name) and (fmt := self.sniff(f, ctx))]

    def events(self, group: Group, ctx: AdapterContext) -> Iterator[Located | EventBatch]:
        (file,) = group.files
        for item in self.read(group.format, file, ctx):
            yield item if isinstance(item, EventBatch) else (file, *item)

    @abstractmethod
    def read(self, fmt: str, file: SourceFile, ctx: AdapterContext) -> Iterator[tuple[int, dict[str, Any]] | EventBatch]:
        ...
