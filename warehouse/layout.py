"""Where things are in a warehouse directory, and its latest version, without loading the Delta
Lake library: what every command needs before it knows whether it needs more.

    WAREHOUSE/events/             the Delta table (data folders and _delta_log/)
    WAREHOUSE/_staging/           batches being prepared
    WAREHOUSE/_catalog/           compiled view catalogs (queries/catalog.py), rebuilt at will
    WAREHOUSE/quarantine/         events the quality gate held back (a second Delta table)
    WAREHOUSE/_spool/otlp/        OTLP requests answered and not yet committed (wal.py, service/otlp_spool.py)
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
    commit file appears whole or not at all, versions are numbered without gaps, and tracewh
    never cleans the log up); None when there is no table yet.

    Every query asks this. Listing the log grows with the versions (a live store makes one a
    second: 86,400 files a day), so the version found last is remembered per log and the files
    after it are looked for one by one (two stats when no commit came). A remembered
    version whose file is gone (the store removed and made again) lists the log once more."""
    log = table_path / "_delta_log"
    known = _newest_seen.get(log)
    if known is None or not _commit_file(log, known).exists():
        known = _listed_newest(log)
        if known is None:
            return None
    while _commit_file(log, known + 1).exists():
        known += 1
    _newest_seen[log] = known
    return known


_newest_seen: dict[Path, int] = {}  # a log's newest version found (latest_version); a dict store is atomic


def _commit_file(log: Path, version: int) -> Path:
    return log / f"{version:020d}.json"


def _listed_newest(log: Path) -> int | None:
    try:
        names = os.listdir(log)
    except FileNotFoundError:
        return None
    versions = [int(m.group(1)) for name in names if (m := COMMIT_FILE.match(name))]
    return max(versions) if versions else None


def holds_store(root: Path) -> bool:
    """Whether `root` is a store: its events table has a commit (`tracewh ingest` made it)."""
    return latest_version(root / "events") is not None


def missing_store(root: Path, demo: Path | None = None) -> str:
    """What to tell someone who reads `root` when no store is there: the path, the store they
    probably meant (a store inside it, a sibling of a similar name, or the demo store `demo`),
    and that ingest is what creates a store."""
    near = nearby_store(root, demo)
    hint = f"; did you mean {near}?" if near else ""
    return f"no tracewh store at {root}{hint} (`tracewh ingest PATH -w {root}` creates one)"


def nearby_store(root: Path, demo: Path | None = None) -> Path | None:
    import difflib

    if holds_store(root / "warehouse"):  # the folder above a store: ~/.tracewh/demo for ~/.tracewh/demo/warehouse
        return root / "warehouse"
    try:
        siblings = [p for p in root.parent.iterdir() if p.is_dir() and p != root]
    except OSError:
        siblings = []
    names = difflib.get_close_matches(root.name, [p.name for p in siblings], n=5, cutoff=0.6)
    for name in names:  # the closest name first
        if holds_store(root.parent / name):
            return root.parent / name
    return demo if demo is not None and demo != root and holds_store(demo) else None
