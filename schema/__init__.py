"""The event contract: columns, kinds, ids and the native format."""

from typing import Any

from .events import (
    BENCHMARK_NAME,
    COLUMN_NAMES,
    COLUMNS,
    KIND_NAMES,
    KINDS,
    NATIVE_FORMAT,
    PARTITION_COLUMNS,
    SCHEMA_VERSION,
    arrow_schema,
    event_id,
    line_event_ids,
)


def __getattr__(name: str) -> Any:
    if name == "ARROW_SCHEMA":  # built on first use: pyarrow costs import time `tracewh sql` need not pay
        return arrow_schema()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "ARROW_SCHEMA",
    "BENCHMARK_NAME",
    "COLUMN_NAMES",
    "COLUMNS",
    "KIND_NAMES",
    "KINDS",
    "NATIVE_FORMAT",
    "PARTITION_COLUMNS",
    "SCHEMA_VERSION",
    "event_id",
    "line_event_ids",
]
