"""What SQL should not do alone: statistics, paper tables, figures, span trees, event export.

Functions here take anything shaped like a Warehouse (`Queryable`): they query, they never
reach the store themselves, and they import nothing above them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import duckdb


class Queryable(Protocol):
    """The part of a Warehouse analytics needs."""

    @property
    def version(self) -> int | None: ...

    @property
    def con(self) -> duckdb.DuckDBPyConnection: ...

    def sql(self, query: str, params: list | dict | None = None) -> duckdb.DuckDBPyRelation: ...
