"""The compiled view catalog: one DuckDB database file per (store version, views), holding
`events_raw` over that version's committed files, every view, and the building blocks
marked `-- tracewh: materialize` computed once.

    WAREHOUSE/_catalog/v000012-<views digest>.duckdb

Every query of that version attaches it read-only instead of parsing 54 view files and
recomputing building blocks in each process. It is never a source of truth: deleting the
folder loses nothing (the next query rebuilds it). It is rebuilt when the store's version
or any view file changes (the digest covers the view files, tracewh's and DuckDB's
versions). Builders take a lock and publish the file by an atomic rename, so concurrent
readers see a whole file or none. A side effect users like: the file opens in any DuckDB
client (duckdb CLI, DBeaver, notebooks) with every view there.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import uuid
from collections.abc import Callable
from contextlib import suppress
from functools import cache
from pathlib import Path

import duckdb

from ..version import __version__
from .registry import QUERIES_DIR, load_views

FOLDER = "_catalog"
# `events` hides events a later one supersedes; in a version where nothing is superseded it is
# events_raw itself, and a count over it then reads only the files' footers.
NOTHING_SUPERSEDED = "CREATE OR REPLACE VIEW events AS SELECT * FROM events_raw"
KEEP_VERSIONS = 3  # the newest catalogs kept; older ones (and any of other view digests) go


@cache
def views_digest() -> str:
    """What the catalog's views are made of: every view file, tracewh's and DuckDB's versions."""
    h = hashlib.sha256(f"tracewh {__version__} duckdb {duckdb.__version__}\n".encode())
    for path in sorted(QUERIES_DIR.glob("*/*.sql")):
        h.update(path.relative_to(QUERIES_DIR).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def catalog_path(root: Path, version: int) -> Path:
    return root / FOLDER / f"v{version:06d}-{_identity(root)}.duckdb"


def _identity(root: Path) -> str:
    """The views' digest and where the store is: a catalog names its files by absolute path, so a
    store copied or moved elsewhere must not use the catalog it carries along (a copy read the
    original's files; a moved store's queries all failed, and the service refused them)."""
    return f"{views_digest()}-{hashlib.sha256(str(root).encode()).hexdigest()[:8]}"


class CatalogUnavailable(Exception):
    """No catalog can be kept for this store; queries make their views in memory instead."""


def ensure_catalog(root: Path, version: int, files: Callable[[], list[str]]) -> Path:
    """The catalog of `version`, built first if missing (`files` lists that version's data files)."""
    path = catalog_path(root, version)
    if "?" in str(path):  # DuckDB reads "?" in a database path as the start of URI parameters
        raise CatalogUnavailable(f"DuckDB cannot open a database file under {root}")
    if path.exists():
        return path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.parent / ".build.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one builder at a time; the others find it built
            if not path.exists():
                _build(path, files())
                _remove_stale(path.parent, _identity(root), keep=path)
    except OSError as e:  # read-only media, a full disk: the catalog is a cache, queries go on without it
        raise CatalogUnavailable(str(e)) from None
    return path


def _build(path: Path, files: list[str]) -> None:
    from .engine import define_events_raw

    building = path.with_name(f".building-{os.getpid()}-{uuid.uuid4().hex[:8]}.duckdb")
    try:
        con = duckdb.connect(str(building))
        try:
            define_events_raw(con, files)
            corrections = con.execute("select count(*) from events_raw where supersedes is not null").fetchone()[0]
            for view in load_views():
                con.execute(NOTHING_SUPERSEDED if view.name == "events" and not corrections else view.sql)
                if view.materialize:
                    _materialize(con, view.name)
            con.execute("CHECKPOINT")
        finally:
            con.close()
        os.replace(building, path)  # readers see the whole file or none
    finally:
        with suppress(FileNotFoundError):
            building.unlink()
        with suppress(FileNotFoundError):
            building.with_suffix(".duckdb.wal").unlink()


def _materialize(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Compute view `name` once into a table the view then reads. Where the store's data makes
    the view fail (a value it cannot cast, say), it stays a plain view: querying it reports
    that error, and every other query of the store still works (a fuzzed DecisionBench value
    failed the whole build, and with it `select count(*) from events`)."""
    table = f"tracewh_cache_{name}"
    try:
        con.execute(f"CREATE TABLE {table} AS SELECT * FROM {name}")
    except duckdb.Error:
        return
    con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM {table}")


def _remove_stale(folder: Path, digest: str, keep: Path) -> None:
    """Catalogs of other view digests (or store locations), and all but the newest KEEP_VERSIONS,
    never `keep` (just built for an old version: `--as-of` is about to open it). A reader that
    has one open keeps reading it: an unlinked file lives on while it is open."""
    catalogs = sorted(p for p in folder.glob("v*.duckdb") if p != keep)
    current = [p for p in catalogs if p.stem.endswith(digest)]
    for path in [p for p in catalogs if p not in current] + current[:-KEEP_VERSIONS]:
        with suppress(FileNotFoundError):
            path.unlink()
