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
from pathlib import Path
from urllib.parse import unquote, urlparse

import orjson
import pyarrow as pa
from deltalake import DeltaTable

from ..errors import StoreError

COMMIT_FILE = re.compile(r"^\d{20}\.json$")


def data_path(table_root: Path, add_path: str) -> Path:
    """The file on disk for a path as an add/remove action records it (URI-encoded, relative or absolute)."""
    parsed = urlparse(add_path)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if parsed.scheme and len(parsed.scheme) > 1:  # s3://..., never written by tracewh
        raise StoreError(f"the Delta log lists a data file outside the local file system: {add_path}")
    return table_root / unquote(add_path)


def file_sizes(table: DeltaTable, table_root: Path) -> dict[Path, int]:
    """The data files of the table's loaded version -> size in bytes the log recorded."""
    actions = pa.table(table.get_add_actions(flatten=True))
    return {data_path(table_root, p): size
            for p, size in zip(actions["path"].to_pylist(), actions["size_bytes"].to_pylist())}


def data_files(table: DeltaTable, table_root: Path) -> list[str]:
    """Absolute paths of the data files that make up the table's loaded version."""
    return [str(p) for p in file_sizes(table, table_root)]


class LogReferences:
    """Every data file any commit of the log adds or removes (old versions stay readable, so none
    of them may be deleted); `files()` is None when the log is not complete from version 0 (then
    no file can be proved unreferenced). Each call reads only the commits added since the last:
    a commit file never changes, and a writer asks at every commit once a compaction (`tracewh
    optimize`) has left replaced files on disk, where reading the whole log each time grew with
    the store."""

    def __init__(self, table_root: Path):
        self.table_root = table_root
        self.referenced: set[Path] = set()
        self.read = 0  # commits read: versions 0 .. read - 1

    def files(self) -> set[Path] | None:
        log = self.table_root / "_delta_log"
        commits = sorted(p for p in log.iterdir() if COMMIT_FILE.match(p.name)) if log.is_dir() else []
        if not commits or any(int(p.name[:20]) != i for i, p in enumerate(commits)):
            return None
        if len(commits) < self.read:  # a table made anew under the same path
            self.referenced, self.read = set(), 0
        for commit in commits[self.read:]:
            for line in commit.read_bytes().splitlines():
                action = orjson.loads(line) if line.strip() else {}
                for kind in ("add", "remove"):
                    if kind in action:
                        self.referenced.add(data_path(self.table_root, action[kind]["path"]))
        self.read = len(commits)
        return self.referenced


def same_file_names(paths: set[Path]) -> set[str]:
    """File names alone: delta-rs names every data file with a fresh UUID, so a name match is a
    match whatever the folders' spelling (the last guard before deleting anything)."""
    return {os.path.basename(p) for p in paths}
