"""DELEGATE-52 rows -> events: each of the three formats has its own module."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...context import AdapterContext
from ...sources import SourceFile
from . import dataset, qa, relay
from .records import DATASET, QA, RELAY, rows

_READERS = {RELAY: relay.events, QA: qa.events, DATASET: dataset.events}


def events(fmt: str, file: SourceFile, ctx: AdapterContext) -> Iterator[tuple[int, dict[str, Any]]]:
    return _READERS[fmt](rows(file, ctx), ctx)
