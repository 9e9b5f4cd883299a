"""The OTLP committer's store work in a process of its own (service/otlp_spool.py).

A commit maps spans to events in Python, and a catalog derivation issues about a hundred DuckDB
statements, taking the GIL back after each. In the server's process that GIL is shared with every
request being answered. One busy Python thread beside the committer made a commit of 1,020 spans
9 times slower (0.17 -> 1.52 s) and a derivation 10 times (0.31 -> 3.10 s), where a busy process
beside it cost 10-20%; under the live bench's queries (answered from the result cache, about
260 a second) a commit and its catalog took 1.25 s together against 0.5 s on a quiet machine
(docs/performance.md, "Tenth stop").

So the committer's thread stays in the server (it gathers the spooled requests and releases them
once committed) and sends the store's work, a commit, a catalog build, a compaction, to this
process: a fresh interpreter (`python -c`) like the query workers (queries/isolation.py), with a
socket pair between them, one call at a time. Calls and answers are pickled; a TracewhError
(the gate's or the adapter's refusal) comes back as itself, any other error as RuntimeError,
which the committer treats as "not the data's fault" and retries.

The process starts when the service starts (or on the first call), holds one Warehouse for its
life (it caches the store's stored ids), and ends when the server closes it, when its socket
closes, or when it finds its server gone (killed -9): a commit it was making then is atomic
either way, and the restarted service's replay of the spool adds nothing already stored (the
store's writer lock and its dedup, across processes). If it dies, the call raises and the next
call starts another.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ..errors import TracewhError
from ..queries.isolation import as_child, said_ready, start_child

# `python -c` puts the working directory first on sys.path: taken off, so that nothing in the
# server's working directory (a user's project folder) shadows a module the process imports.
MAIN = "import sys; sys.path[:] = [p for p in sys.path if p]; from tracewh.service.commit_process import main; main()"
CALLS = ("ingest_otlp", "prepare", "needs_optimize", "optimize")  # what the committer and the compactor ask of the store


class CommitProcess:
    """The store at `root`, worked on in a child process: ingest_otlp, prepare, needs_optimize and
    optimize as a Warehouse has them (service/compaction.py calls the last three). One call at a time."""

    def __init__(self, root: Path):
        self.root = root
        self._process: subprocess.Popen | None = None
        self._conn: Connection | None = None
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        """The process's id while it runs (for tests, and an operator looking for it)."""
        return self._process.pid if self._process is not None else None

    def start(self) -> None:
        """Start the process, if it is not running, and wait for its imports (about 0.7 s)."""
        with self._lock:
            self._started()

    def ingest_otlp(self, requests: Sequence[bytes], *, encoding: str = "protobuf", quarantine: bool = False) -> Any:
        return self._call("ingest_otlp", list(requests), encoding=encoding, quarantine=quarantine)

    def prepare(self) -> None:
        self._call("prepare")

    def needs_optimize(self, when_over: int, target_bytes: int | None = None) -> bool:
        return self._call("needs_optimize", when_over, target_bytes)

    def optimize(self, **kwargs: Any) -> Any:
        return self._call("optimize", **kwargs)

    def close(self) -> None:
        """End the process (the next call starts another)."""
        with self._lock:
            self._stop()

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            conn = self._started()
            try:
                conn.send((name, args, kwargs))
                status, value = conn.recv()
            except (EOFError, OSError):
                code = self._stop()
                raise RuntimeError(f"the OTLP commit process ended (exit code {code}) during {name}") from None
        if status == "error":
            raise value
        return value

    def _started(self) -> Connection:
        if self._process is not None and self._process.poll() is None and self._conn is not None:
            return self._conn
        self._stop()
        level = logging.getLogger("tracewh").getEffectiveLevel()  # the server's, for the store's own log lines
        # the working directory: the server's, as the committer thread had it (MAIN keeps it off sys.path)
        self._process, self._conn = start_child(MAIN, [str(self.root), str(level)])
        if said_ready(self._conn):
            return self._conn
        code = self._stop()
        raise RuntimeError(f"the OTLP commit process did not start (exit code {code})")

    def _stop(self) -> int | None:
        """Kill the process if it runs (a commit cut short is atomic: nothing of it is kept); its exit code."""
        process, self._process = self._process, None
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if process is None:
            return None
        process.kill()
        return process.wait()


# -- in the child ----------------------------------------------------------------------------------

def main() -> None:
    """The process's entry point: `python -c MAIN <socket fd> <server pid> <store folder> <log level>`."""
    fd, server, root, level = sys.argv[1:5]
    as_child(int(server))
    logging.basicConfig(format="%(name)s %(levelname)s %(message)s")  # stderr: the server's log
    logging.getLogger("tracewh").setLevel(int(level))
    as_committer()
    warehouse, prices = _loaded(Path(root))
    with warehouse.batches_on_one_instance():  # for the process's life
        conn = Connection(int(fd))
        conn.send("ready")
        serve(conn, warehouse, prices)


def as_committer() -> None:
    """This process derives a catalog after every commit, back to back, while the server's queries
    use the other core: its derivations run on one thread (queries/catalog.py, DERIVATION_THREADS)."""
    from ..queries import catalog

    catalog.DERIVATION_THREADS = 1


def _loaded(root: Path) -> tuple[Any, Any]:
    """The store and the price list, and what the first commit would otherwise import (0.2 s of pyarrow's)."""
    import pyarrow as pa

    from ..api import Warehouse
    from ..ingest import bulk, pipeline  # noqa: F401
    from ..ingest.adapters.otel import events  # noqa: F401
    from ..ingest.prices import PriceRegistry

    pa.array(["loaded"])
    return Warehouse(root), PriceRegistry.load()


def serve(conn: Connection, warehouse: Any, prices: Any) -> None:
    """Run each call on the store, answer, repeat; end when the server's end of the socket closes."""
    while True:
        try:
            name, args, kwargs = conn.recv()
        except (EOFError, OSError):
            return
        if name not in CALLS:
            conn.send(("error", RuntimeError(f"not a call of the commit process: {name}")))
            continue
        if name == "ingest_otlp":
            kwargs["prices"] = prices
        try:
            conn.send(("ok", getattr(warehouse, name)(*args, **kwargs)))
        except TracewhError as e:
            conn.send(("error", e))
        except Exception as e:  # noqa: BLE001 - the committer logs it and tries again
            conn.send(("error", RuntimeError(f"{type(e).__name__}: {e}")))
