"""The event contract: columns, kinds, ids and the native format."""

from .events import (
    ARROW_SCHEMA,
    COLUMN_NAMES,
    COLUMNS,
    KIND_NAMES,
    KINDS,
    NATIVE_FORMAT,
    PARTITION_COLUMNS,
    SCHEMA_VERSION,
    event_id,
)

__all__ = [
    "ARROW_SCHEMA",
    "COLUMN_NAMES",
    "COLUMNS",
    "KIND_NAMES",
    "KINDS",
    "NATIVE_FORMAT",
    "PARTITION_COLUMNS",
    "SCHEMA_VERSION",
    "event_id",
]
