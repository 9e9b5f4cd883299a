"""The Python API: `tracewh.open()` and the Warehouse it returns."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import duckdb

from ..paths import default_warehouse
from ..queries.registry import load_views
from .connection import connect
from .store import Batch, Store


@dataclass(frozen=True)
class ViewInfo:
    name: str
    description: str
    columns: list[tuple[str, str]]  # (name, DuckDB type)


class Warehouse:
    """A tracewh store, read through DuckDB. `version` pins it as of a commit (time travel)."""

    def __init__(self, path: str | Path | None = None, version: int | None = None):
        self.path = Path(path) if path is not None else default_warehouse()
        self.store = Store(self.path)
        self.pinned = version
        self._con: duckdb.DuckDBPyConnection | None = None

    def __repr__(self) -> str:
        return f"Warehouse({str(self.path)!r}, version={self.version})"

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            self._con = connect(self.store, self.pinned)
        return self._con

    @property
    def version(self) -> int | None:
        return self.pinned if self.pinned is not None else self.store.version()

    def sql(self, query: str, params: list | None = None) -> duckdb.DuckDBPyRelation:
        """A DuckDB relation: `.pl()` for Polars, `.arrow()` for Arrow, `.fetchall()` for tuples."""
        return self.con.sql(query, params=params)

    def as_of(self, version: int) -> Warehouse:
        return Warehouse(self.path, version)

    def ingest(self, paths: Iterable[str | Path], attrs: dict[str, str] | None = None, **options):
        from ..ingest.pipeline import ingest

        if self.pinned is not None:
            raise ValueError("this Warehouse is pinned to a past version; open the latest to ingest")
        report = ingest(self.store, [Path(p) for p in paths], attrs, **options)
        self.close()  # the next query sees the new commit
        return report

    def log(self) -> list[Batch]:
        return self.store.batches()

    def views(self) -> list[ViewInfo]:
        return [ViewInfo(v.name, v.description, [(r[0], r[1]) for r in self.sql(f"DESCRIBE {v.name}").fetchall()])
                for v in load_views()]

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None


def open(path: str | Path | None = None, version: int | None = None) -> Warehouse:  # noqa: A001
    """Open the warehouse at `path` (default: $TRACEWH_HOME/warehouse), optionally as of a version."""
    return Warehouse(path, version)
