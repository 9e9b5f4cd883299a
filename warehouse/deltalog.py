"""Where a Delta table's data files are, in the one form every part of tracewh compares and
hands to DuckDB: plain (decoded) absolute paths under the table's resolved root.

Why not `DeltaTable.file_uris()`: it percent-encodes the table root ("/my%20runs/...") but
not the file part, so its strings match neither the files on disk nor what `Path.glob`
returns. The Delta protocol stores each file as a URI-encoded path relative to the table
root; decoding it once and joining it to the root gives the file on disk.

Also here: the table-root check. delta-rs decodes percent escapes in the table path a second
time when it reads the log, and rejects some characters outright, so a store whose path
holds them cannot work at all; refusing it up front is the only safe answer.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import orjson
import pyarrow as pa
from deltalake import DeltaTable

from ..errors import StoreError, UsageError

# "%41": delta-rs reads it as "A" when it opens the log, after writing files under "%41".
# "[", "]", "|", "^", "\" and control characters: delta-rs refuses or mangles the path.
UNSUPPORTED_IN_PATH = re.compile(r"%[0-9A-Fa-f]{2}|[\[\]|^\\\x00-\x1f\x7f]")
COMMIT_FILE = re.compile(r"^\d{20}\.json$")


def resolve_root(path: str | Path) -> Path:
    """The store directory as one absolute path (`~` expanded, relative forms resolved once, so a
    later chdir changes nothing); UsageError when delta-rs cannot hold a table there."""
    root = Path(path).expanduser().resolve()
    bad = UNSUPPORTED_IN_PATH.search(str(root))
    if bad:
        raise UsageError(f"cannot keep a store at {root}: its path contains {bad.group()!r}, which the Delta Lake "
                         "library (delta-rs) misreads; choose a directory whose path has no '%' followed by two hex "
                         "digits and none of [ ] | ^ \\ or control characters")
    return root


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


def referenced_in_any_version(table_root: Path) -> set[Path] | None:
    """Every data file any commit of the log adds or removes (old versions stay readable, so
    none of them may be deleted). None when the log is not complete from version 0 (then no
    file can be proved unreferenced)."""
    log = table_root / "_delta_log"
    commits = sorted(p for p in log.iterdir() if COMMIT_FILE.match(p.name)) if log.is_dir() else []
    if not commits or any(int(p.name[:20]) != i for i, p in enumerate(commits)):
        return None
    referenced: set[Path] = set()
    for commit in commits:
        for line in commit.read_bytes().splitlines():
            action = orjson.loads(line) if line.strip() else {}
            for kind in ("add", "remove"):
                if kind in action:
                    referenced.add(data_path(table_root, action[kind]["path"]))
    return referenced


def same_file_names(paths: set[Path]) -> set[str]:
    """File names alone: delta-rs names every data file with a fresh UUID, so a name match is a
    match whatever the folders' spelling (the last guard before deleting anything)."""
    return {os.path.basename(p) for p in paths}
