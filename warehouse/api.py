"""The Python API: `tracewh.open()` and the Warehouse it returns."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import duckdb

from ..paths import default_warehouse
from ..queries.registry import load_views
from .connection import ViewCreator, connect
from .store import Batch, Store


@dataclass(frozen=True)
class ViewInfo:
    name: str
    description: str
    columns: list[tuple[str, str]]  # (name, DuckDB type)


class Warehouse:
    """A tracewh store, read through DuckDB. `version` pins it as of a commit (time travel)."""

    def __init__(self, path: str | Path | None = None, version: int | None = None):
        self.store = Store(path if path is not None else default_warehouse())
        self.path = self.store.root  # absolute, resolved once
        self.pinned = version
        self._con: duckdb.DuckDBPyConnection | None = None
        self._views: ViewCreator | None = None

    def __repr__(self) -> str:
        return f"Warehouse({str(self.path)!r}, version={self.version})"

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection. `events_raw` is always there; views appear as `sql()` needs them
        (call `create_views()` first to query views on the raw connection)."""
        if self._con is None:
            self._con = connect(self.store, self.pinned)
            self._views = ViewCreator(self._con)
        return self._con

    def create_views(self, query: str | None = None) -> None:
        """Create the views `query` reads (all views when no query is given)."""
        self.con
        assert self._views is not None
        self._views.for_query(query if query is not None else _every_view())

    @property
    def version(self) -> int | None:
        return self.pinned if self.pinned is not None else self.store.version()

    def sql(self, query: str, params: list | None = None) -> duckdb.DuckDBPyRelation:
        """A DuckDB relation: `.pl()` for Polars, `.arrow()` for Arrow, `.fetchall()` for tuples."""
        self.create_views(query)
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

    def doctor(self) -> dict[str, list[str]]:
        """Remove what interrupted writers left behind; returns what was removed, by kind."""
        return self.store.doctor()

    def views(self) -> list[ViewInfo]:
        """Every view's description and columns, bound on a scratch connection (nothing is computed,
        not even the building blocks a query connection materializes)."""
        con = connect(self.store, self.pinned)
        try:
            ViewCreator(con, materialize=False).for_query(_every_view())
            relations = {v.name: con.sql(f"from {v.name}") for v in load_views()}  # bound, never run
            return [ViewInfo(v.name, v.description, list(zip(relations[v.name].columns, map(str, relations[v.name].types))))
                    for v in load_views()]
        finally:
            con.close()

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = self._views = None


def _every_view() -> str:
    return " ".join(f"select * from {v.name};" for v in load_views())


def open(path: str | Path | None = None, version: int | None = None) -> Warehouse:  # noqa: A001
    """Open the warehouse at `path` (default: $TRACEWH_HOME/warehouse), optionally as of a version."""
    return Warehouse(path, version)
