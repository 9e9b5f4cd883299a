"""The shape every source adapter has, and the base for formats whose files stand alone.

An adapter turns a source format's raw records into events and nothing else: no ids, no
batch, no defaults, no validation (the pipeline does those for every adapter alike).

    sniff(file, ctx)    -> the format name if the file is one of this adapter's, else None
    groups(files, ctx)  -> the units it reads: one file, or several read together (a run folder)
    events(group, ctx)  -> (file, line or record number, event dict) for every event of a unit

Each adapter is one package under ingest/adapters/ laid out the same way:
`__init__.py` (the ADAPTER object and a description of the format, with its
docs/formats/ page), `records.py` (which files it reads and how their raw records come
off them) and `events.py` (raw records -> event dicts); larger formats add modules of
their own beside those.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..context import AdapterContext
from ..sources import SourceFile, is_data_file

Located = tuple[SourceFile, int, dict[str, Any]]  # (file, line or record number, event)


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

    def events(self, group: Group, ctx: AdapterContext) -> Iterator[Located]: ...


class FileAdapter(ABC):
    """For formats where every data file stands alone: a group per file sniff() accepts;
    subclasses give `sniff` and `read(format, file, ctx)` yielding (line, event)."""

    name: str
    description: str

    @abstractmethod
    def sniff(self, file: SourceFile, ctx: AdapterContext) -> str | None: ...

    def groups(self, files: list[SourceFile], ctx: AdapterContext) -> list[Group]:
        return [Group(fmt, [f]) for f in files if is_data_file(f.name) and (fmt := self.sniff(f, ctx))]

    def events(self, group: Group, ctx: AdapterContext) -> Iterator[Located]:
        (file,) = group.files
        for line, event in self.read(group.format, file, ctx):
            yield file, line, event

    @abstractmethod
    def read(self, fmt: str, file: SourceFile, ctx: AdapterContext) -> Iterator[tuple[int, dict[str, Any]]]: ...
