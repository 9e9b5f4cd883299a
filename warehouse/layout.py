"""Where things are in a warehouse directory, and its latest version, without loading the Delta
Lake library: what every command needs before it knows whether it needs more.

    WAREHOUSE/events/             the Delta table (data folders and _delta_log/)
    WAREHOUSE/_staging/           batches being prepared
    WAREHOUSE/_catalog/           compiled view catalogs (queries/catalog.py), rebuilt at will
    WAREHOUSE/quarantine/         events the quality gate held back (a second Delta table)
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import UsageError

# "%41": delta-rs reads it as "A" when it opens the log, after writing files under "%41".
# "[", "]", "|", "^", "\" and control characters: delta-rs refuses or mangles the path.
UNSUPPORTED_IN_PATH = re.compile(r"%[0-9A-Fa-f]{2}|[\[\]|^\\\x00-\x1f\x7f]")
COMMIT_FILE = re.compile(r"^(\d{20})\.json$")


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


def latest_version(table_path: Path) -> int | None:
    """The newest committed version: the highest numbered commit file of the Delta log (a
    commit file appears whole or not at all, and tracewh never cleans the log up); None
    when there is no table yet."""
    try:
        names = os.listdir(table_path / "_delta_log")
    except FileNotFoundError:
        return None
    versions = [int(m.group(1)) for name in names if (m := COMMIT_FILE.match(name))]
    return max(versions) if versions else None
