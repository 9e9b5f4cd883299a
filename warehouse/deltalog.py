"""Where a Delta table's data files are, in the one form every part of tracewh compares and
hands to DuckDB: plain (decoded) absolute paths under the table's resolved root.

Why not `DeltaTable.file_uris()`: it percent-encodes the table root ("/my%20runs/...") but
not the file part, so its strings match neither the files on disk nor what `Path.glob`
returns. The Delta protocol stores each file as a URI-encoded path relative to the table
root; decoding it once and joining it to the root gives the file on disk.

(The table-root check, and the cheap latest version, are in layout.py.)
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import orjson
import pyarrow as pa
from deltalake import DeltaTable

from ..errors import StoreError

COMMIT_FILE = re.compile(r"^\d{20}\.json$")


def data_path(table_root: Path, add_path: str) -> Path:
    """The file on disk for a path as an add/remove action records it (URI-encoded, relative or absolute)."""
    return Path(_data_path(str(table_root), add_path))


def _data_path(table_root: str, add_path: str) -> str:
    # The usual case first, as plain string work: the log lists every data file, and a writer
    # resolves them all at each commit (urlparse and Path per file cost ~10 ms per 1,000 files).
    if "%" not in add_path and ":" not in add_path and not add_path.startswith("/"):
        return f"{table_root}/{add_path}"
    parsed = urlparse(add_path)
    if parsed.scheme == "file":
        return unquote(parsed.path)
    if parsed.scheme and len(parsed.scheme) > 1:  # s3://..., never written by tracewh
        raise StoreError(f"the Delta log lists a data file outside the local file system: {add_path}")
    return os.path.join(table_root, unquote(add_path))


def file_sizes(table: DeltaTable, table_root: Path) -> dict[Path, int]:
    """The data files of the table's loaded version -> size in bytes the log recorded."""
    return {Path(p): size for p, size in _files_and_sizes(table, table_root)}


def data_files(table: DeltaTable, table_root: Path) -> list[str]:
    """Absolute paths of the data files that make up the table's loaded version."""
    return [p for p, _ in _files_and_sizes(table, table_root)]


def _files_and_sizes(table: DeltaTable, table_root: Path) -> list[tuple[str, int]]:
    actions = pa.table(table.get_add_actions(flatten=True))
    root = str(table_root)
    return [(_data_path(root, p), size) for p, size in zip(actions["path"].to_pylist(), actions["size_bytes"].to_pylist())]


class LogIndex:
    """What a writer asks of the whole log at every commit, read once per commit file (a commit
    file never changes; reading the whole log each time grew with the store):

    - `files()`: every data file any commit adds or removes (old versions stay readable, so
      none of them may be deleted);
    - `keys()`: the batch keys committed (`keys_of` a commit's metadata), for idempotency.

    Both are None when the log is not complete from version 0: then no file can be proved
    unreferenced, and the caller asks delta-rs for the history instead."""

    def __init__(self, table_root: Path, keys_of: Callable[[dict[str, Any]], list[str]]):
        self.table_root, self.keys_of = table_root, keys_of
        self.referenced: set[Path] = set()
        self.batch_keys: set[str] = set()
        self.read = 0  # commits read: versions 0 .. read - 1
        self.first: tuple[int, int] | None = None  # commit 0's inode and mtime: which table was read

    def files(self) -> set[Path] | None:
        return self.referenced if self._refresh() else None

    def keys(self) -> set[str] | None:
        return self.batch_keys if self._refresh() else None

    def _refresh(self) -> bool:
        log = self.table_root / "_delta_log"
        commits = sorted(p for p in log.iterdir() if COMMIT_FILE.match(p.name)) if log.is_dir() else []
        if not commits or any(int(p.name[:20]) != i for i, p in enumerate(commits)):
            return False
        first = commits[0].stat()
        if (first.st_ino, first.st_mtime_ns) != self.first:  # a table made anew under the same path
            self.referenced, self.batch_keys, self.read = set(), set(), 0
            self.first = (first.st_ino, first.st_mtime_ns)
        root = str(self.table_root)
        for commit in commits[self.read:]:
            for line in commit.read_bytes().splitlines():
                action = orjson.loads(line) if line.strip() else {}
                for kind in ("add", "remove"):
                    if kind in action:
                        self.referenced.add(Path(_data_path(root, action[kind]["path"])))
                self.batch_keys.update(self.keys_of(action.get("commitInfo", {})))
        self.read = len(commits)
        return True


def same_file_names(paths: set[Path]) -> set[str]:
    """File names alone: delta-rs names every data file with a fresh UUID, so a name match is a
    match whatever the folders' spelling (the last guard before deleting anything)."""
    return {os.path.basename(p) for p in paths}
