"""The part of a Warehouse judging and labelling use (api.py passes itself): judging reads the
store through its queries and commits through the store's pipeline, and imports nothing above it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import duckdb

    from ...queries.engine import QueryResult
    from ...warehouse.store import Store


class WarehouseAccess(Protocol):
    path: Path

    @property
    def store(self) -> Store: ...

    def exists(self) -> bool: ...

    def sql(self, query: str, params: list | dict | None = None) -> duckdb.DuckDBPyRelation: ...

    def query(self, text: str, **limits: Any) -> QueryResult: ...

    def close(self) -> None: ...
