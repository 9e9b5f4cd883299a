"""Answers of the service's queries, kept per store version.

A store version never changes, so a query on the same engine (the same version's catalog and
files, the same settings) with the same parameters and limits gives the same rows: the service
answers a repeat from memory instead of running it again. Dashboards, the web page and clients
polling the headline views repeat the same few queries between commits (bench/live_load.py's
8 clients: 13 queries of 5 texts per version while OTLP commits a version every 0.6 s). A new
commit is a new version, hence a new key: a kept answer is never older than what the query
would read.

Not kept: queries whose text names a function whose answer changes from run to run (the
clock, random numbers, sequences: DuckDB's VOLATILE functions and the clock functions it calls
CONSISTENT_WITHIN_QUERY) or that sample rows, answers that are errors (a time limit depends on
the load), and answers over `entry_bytes`. The check is on the query's words, so a column
named `now` is just not cached. Identical queries arriving together run once: the others wait
for the first one's answer (if it brings none, each runs its own).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from functools import cache
from typing import Any

MAX_BYTES = 64 << 20  # all answers kept together
ENTRY_BYTES = 4 << 20  # one answer at most
# Functions of the clock that DuckDB marks CONSISTENT_WITHIN_QUERY (the others of that class, such
# as year() or date_trunc(), depend on the engine's locked settings only) and the SQL keywords
# that call them or sample rows.
CLOCK_AND_SAMPLING = ("now", "today", "current_date", "current_time", "current_timestamp", "localtime",
                      "localtimestamp", "current_localtime", "current_localtimestamp", "get_current_time",
                      "get_current_timestamp", "transaction_timestamp", "sample", "tablesample")

Answer = tuple[Any, bytes | None]  # the worker's header and its Arrow IPC bytes (queries/isolation.py)


@cache
def _changing_words() -> re.Pattern[str]:
    import duckdb

    with duckdb.connect() as con:
        volatile = [name for (name,) in con.execute(
            "SELECT DISTINCT function_name FROM duckdb_functions() WHERE stability = 'VOLATILE'").fetchall()]
    names = sorted({*volatile, *CLOCK_AND_SAMPLING}, key=len, reverse=True)
    return re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\b", re.IGNORECASE)


def repeatable(query: str) -> bool:
    """Whether the query's answer on one store version is the same every time it runs."""
    return _changing_words().search(query) is None


class ResultCache:
    """Answers by key, least recently used dropped past `max_bytes`; `hits` and `runs` count what it
    answered from memory and what it let run."""

    def __init__(self, max_bytes: int = MAX_BYTES, entry_bytes: int = ENTRY_BYTES):
        self.max_bytes, self.entry_bytes = max_bytes, min(entry_bytes, max_bytes)
        self._answers: OrderedDict[Hashable, Answer] = OrderedDict()
        self._running: dict[Hashable, threading.Event] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = self.runs = 0

    def answer(self, key: Hashable | None, run: Callable[[], Answer]) -> Answer:
        """The kept answer for `key`, or `run()`'s, kept when it may be. `key` None: run, keep nothing."""
        if key is None or self.max_bytes <= 0:
            return self._run(run)
        with self._lock:
            if (kept := self._hit(key)) is not None:
                return kept
            running = self._running.get(key)
            if running is None:
                self._running[key] = threading.Event()
        if running is not None:  # the same query is running: its answer, if kept, is ours too
            running.wait()
            with self._lock:
                kept = self._hit(key)
            return kept if kept is not None else self._run(run)
        try:
            answer = self._run(run)
            self._keep(key, answer)
            return answer
        finally:
            with self._lock:
                self._running.pop(key).set()

    def _hit(self, key: Hashable) -> Answer | None:
        """The kept answer, marked as just used (called with the lock held)."""
        if (kept := self._answers.get(key)) is not None:
            self._answers.move_to_end(key)
            self.hits += 1
        return kept

    def _run(self, run: Callable[[], Answer]) -> Answer:
        with self._lock:
            self.runs += 1
        return run()

    def _keep(self, key: Hashable, answer: Answer) -> None:
        header, payload = answer
        size = len(payload or b"")
        if header[0] != "rows" or size > self.entry_bytes:
            return
        with self._lock:
            if key in self._answers:
                return
            self._answers[key] = answer
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, (_, dropped) = self._answers.popitem(last=False)
                self._bytes -= len(dropped or b"")
