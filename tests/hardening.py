"""Shared by the hardening tests (test_guard_escapes.py, test_input_fuzz.py, test_service_abuse.py):
counts for CI and heavy runs, what "unchanged" means for a store, a process's peak memory."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

HEAVY = os.environ.get("TRACEWH_HEAVY") == "1"


def count(ci: int, heavy: int) -> int:
    """How many cases a fuzz runs: small in CI, the full count with TRACEWH_HEAVY=1."""
    return heavy if HEAVY else ci


def fingerprint(folder: Path) -> dict[str, str]:
    """Every file under `folder` and a digest of its bytes: equal fingerprints, unchanged files."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def data_files(store: Path) -> dict[str, str]:
    """The store's committed data and log (not the query catalog, which reads may compile)."""
    return {name: digest for name, digest in fingerprint(store).items() if not name.startswith("_catalog/")}


def one_line(stderr: str) -> bool:
    """The CLI's refusal: one line on stderr, no traceback."""
    return stderr.strip() != "" and "\n" not in stderr.strip() and "Traceback" not in stderr


def peak_rss_mb(pid: int) -> float:
    """A live process's peak resident memory (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmHWM for process {pid}")


def files_under(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def peak_while(work, measure) -> tuple[object, int]:
    """Run `work()` while a thread calls `measure()` every 5 ms: (work's result, the largest measure seen)."""
    import threading
    import time

    peak, done = 0, threading.Event()

    def watch() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, measure())
            time.sleep(0.005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        return work(), peak
    finally:
        done.set()
        watcher.join()


def file_sizes(folder: Path) -> list[int]:
    """Sizes of the files under `folder` now (files that vanish while listed count as nothing)."""
    sizes = []
    for path in folder.rglob("*"):
        try:
            sizes.append(path.stat().st_size if path.is_file() else 0)
        except FileNotFoundError:
            pass
    return sizes
