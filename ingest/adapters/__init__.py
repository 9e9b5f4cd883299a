"""The source adapters: one package per source format family, all of one shape (base.py).

ADAPTERS is the one registry, in claiming order: each adapter in turn takes the groups of
files it recognises among those no earlier adapter took. Formats spread over several
files (a run folder) come first, so their JSON Lines members are not read as files that
stand alone; among the rest the first adapter to recognise a file reads it.
"""

from __future__ import annotations

from ...errors import BadInputError
from ..context import AdapterContext
from ..sources import SourceFile
from .base import Adapter, EventBatch, FileAdapter, Group, Located
from .bfcl import ADAPTER as BFCL
from .decisionbench import ADAPTER as DECISIONBENCH
from .delegate52 import ADAPTER as DELEGATE52
from .entcollabbench import ADAPTER as ENTCOLLABBENCH
from .inspect import ADAPTER as INSPECT
from .native import ADAPTER as NATIVE
from .otel import ADAPTER as OTEL
from .release import ADAPTER as RELEASE
from .taubench import ADAPTER as TAUBENCH

ADAPTERS: tuple[Adapter, ...] = (DECISIONBENCH, ENTCOLLABBENCH, RELEASE, NATIVE, INSPECT, DELEGATE52, TAUBENCH, BFCL,
                                 OTEL)


def unrecognised(file: SourceFile, ctx: AdapterContext) -> BadInputError:
    """The error for a data file no adapter claimed: what its first record looks like, and what we read."""
    first = ctx.first(file)
    known = ", ".join(a.name for a in ADAPTERS)  # one short line: each format's files are in docs/formats/
    what = "its first line is not a JSON object" if first is None else f"first record has keys {sorted(first)[:8]}"
    return BadInputError(file.display, f"no adapter recognises this file ({what}); tracewh reads {known} "
                         "(`tracewh ingest --help`, docs/formats/)", line=1)


__all__ = ["ADAPTERS", "Adapter", "EventBatch", "FileAdapter", "Group", "Located", "unrecognised"]
