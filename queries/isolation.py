"""The service's queries in worker processes, so that no query can take the server down.

DuckDB's memory_limit covers its operators' buffers but not one huge value built by a scalar
function (`unnest(range(500000000))`, `repeat('x', 2000000000)`: 16 GB and 4.5 GB resident
against a 512 MB limit), and its interrupt is not checked inside such a call (an answer 49 s
after a 10 s limit). No setting can stop that inside the server's own process, so the service
runs `QueryEngine.execute` in a few long-lived worker processes instead, one query at a time
each, and watches them from the calling thread: every POLL_S it reads the worker's resident
memory from /proc and kills it (SIGKILL) past `process_memory`; it kills it too when the
answer is not in `grace_s` after the time limit (DuckDB's interrupt, which the worker's engine
still arms, stops ordinary queries on time). A killed worker's spill folder is removed and a
new worker started in its place. The request gets the QueryError or QueryTimeout the same limit raises
in-process, so every door words a limit alike.

Workers are fresh interpreters (`python -c`, a socket pair between them and the server), never
forks of the threaded server; not multiprocessing's spawn or forkserver either, which run the
server's `__main__` again in the child (a script without an `if __name__ == "__main__"` guard
ran twice). One starts in ~0.7 s (its imports, the views parsed), never counted in a query's
time: the server starts one when it starts, the others when queries first run at once, and a
killed worker's replacement at once. Each keeps open engines for the last store versions it
served (a catalog attach costs 20-60 ms). Rows come back as Arrow IPC, errors as (class name, message),
raised again here as the same TracewhError subclass. A worker ends when its socket closes (the
server stopped) or, mid-query, when it finds the server gone.

No rlimit backs the watch. RLIMIT_AS: a worker's address space is ~1.1 GB idle at 100 MB
resident and 1.8 GB for a sort spilling at 620 MB (DuckDB's and glibc's reservations, which
grow with the core count), so a cap near the ceiling refused ordinary queries. RLIMIT_DATA
(writable private memory) was no better: 1.26 GB at 115 MB resident once an engine was open,
and it stays at its high-water mark (1.67 GB after that sort), so a cap refused a sort that had
just run.
"""

from __future__ import annotations

import atexit
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from .. import errors
from ..errors import QueryError, QueryTimeout, TracewhError
from . import result_cache
from .engine import EngineSpec, Limits, QueryEngine, QueryResult, Spill

POLL_S = 0.02  # how often a running query's memory is read
GRACE_S = 0.25  # past the time limit, how long DuckDB's own interrupt gets before the worker is killed
STARTUP_S = 60.0  # a worker that has not said it is ready by then is taken for broken
ENGINES_KEPT = 2  # open engines per worker: the store's latest version and the one before (a commit under way)
PAGE = os.sysconf("SC_PAGE_SIZE")
SPILL_PREFIX = "tracewh-serve-spill-"  # then the server's pid


@dataclass
class Worker:
    """One worker process, the server's end of its socket, and the folder its engines spill into."""

    process: subprocess.Popen
    conn: Connection
    spill: Path
    ready: bool = False  # it said so, once its imports were done

    def alive(self) -> bool:
        return self.process.poll() is None

    def resident_bytes(self) -> int:
        """Resident memory (VmRSS) of the process; 0 once it is gone."""
        try:
            with open(f"/proc/{self.process.pid}/statm") as statm:
                return int(statm.read().split()[1]) * PAGE
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            return 0

    def kill(self) -> None:
        self.process.kill()  # SIGKILL; nothing to do if it is gone already
        self.process.wait()
        self.conn.close()
        shutil.rmtree(self.spill, ignore_errors=True)  # a killed engine cannot remove its own spill files


class QueryWorkers:
    """`workers` processes that run the queries of engines opened with this pool.

    `process_memory`: a worker's ceiling (resident bytes). `spill_bytes`: what all of them and the
    server's own engines may spill together, shared equally, in a folder of their own under the
    system's temporary directory, which `close()` removes."""

    def __init__(self, workers: int, process_memory: int, spill_bytes: int | None = None, grace_s: float = GRACE_S,
                 cache_bytes: int = result_cache.MAX_BYTES):
        self.workers, self.process_memory, self.spill_bytes = workers, process_memory, spill_bytes
        self.grace_s = grace_s
        self.cache = result_cache.ResultCache(cache_bytes)  # answers per store version (queries/result_cache.py)
        self._idle: queue.LifoQueue[Worker | None] = queue.LifoQueue()  # the warmest first: its engines are open
        for _ in range(workers):
            self._idle.put(None)  # a slot whose worker starts when a query first needs it
        self._folder: Path | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def folder(self) -> Path:
        """The pool's spill folder (made on first use)."""
        with self._lock:
            if self._folder is None:
                _remove_orphans(Path(tempfile.gettempdir()))
                self._folder = Path(tempfile.mkdtemp(prefix=f"{SPILL_PREFIX}{os.getpid()}-"))
                atexit.register(shutil.rmtree, self._folder, True)  # also when close() is never called
            return self._folder

    def start(self) -> None:
        """Start one worker and wait until it is ready (the server's start-up), so that the first
        query does not wait for one. The others start when queries run at once: the warmest worker
        is taken first, so a server whose queries come one by one keeps one (~75 MB each, idle).
        The server's own first-query costs are paid now too (`_warm_up`)."""
        _warm_up()
        worker = self._idle.get()
        try:
            worker = worker if worker is not None and worker.alive() else self._start()
            _await_ready(worker)
        finally:
            self._idle.put(worker)

    def server_spill(self) -> Spill:
        """Where the server's own engines spill (they run no user query: the guard's parse, column lookups)."""
        return Spill(self.folder, self._share())

    def _share(self) -> int | None:
        return None if self.spill_bytes is None else self.spill_bytes // (self.workers + 1)

    def execute(self, spec: EngineSpec, query: str, params: list | None, limits: Limits) -> QueryResult:
        """`query` on the engine `spec` opens, in a worker, within `limits` and the memory ceiling; a
        repeat on the same engine answered from the cache."""
        key = _cache_key(spec, query, params, limits)
        return _result(*self.cache.answer(key, lambda: self._run(spec, query, params, limits)))

    def _run(self, spec: EngineSpec, query: str, params: list | None, limits: Limits) -> result_cache.Answer:
        """The worker's answer header and rows (Arrow IPC) for `query`."""
        worker, answered = self._idle.get(), False
        try:
            if worker is not None and not worker.alive():  # died idle (the OOM killer, an operator's kill)
                worker.kill()
                worker = None
            if worker is None:
                worker = self._start()
            _await_ready(worker)
            worker.conn.send((spec, query, params, limits))
            header = self._wait(worker, limits.seconds)
            payload = worker.conn.recv_bytes() if header[0] == "rows" else None
            answered = True
        finally:
            if not answered and worker is not None:
                # Stopped (its limits) or ended mid-answer: a worker in an unknown state is never
                # reused. Killed now; reaping it and starting its replacement (about a second on a
                # loaded machine: a timed-out query answered 1.2 s past its limit) happen after the answer.
                worker.process.kill()
                threading.Thread(target=self._replace, args=(worker,), daemon=True,
                                 name="tracewh-query-worker-replace").start()
            else:
                self._idle.put(worker)
        return header, payload

    def _replace(self, worker: Worker) -> None:
        """`worker`'s slot given a new worker (or None, for the next query to start one)."""
        worker.kill()
        self._idle.put(self._replacement())

    def _wait(self, worker: Worker, seconds: float | None) -> Any:
        """The worker's answer header, once it comes; the worker is killed past the memory ceiling
        or `grace_s` past the time limit."""
        deadline = None if seconds is None else time.monotonic() + seconds + self.grace_s
        while not worker.conn.poll(POLL_S):
            resident = worker.resident_bytes()
            if resident > self.process_memory:
                raise QueryError(f"the query needs more memory than it may use (its process reached "
                                 f"{resident >> 20} MB; the server allows one query {self.process_memory >> 20} MB)")
            if deadline is not None and time.monotonic() > deadline:
                raise QueryTimeout(f"query stopped after {seconds:g} s (its time limit)")
        try:
            return worker.conn.recv()
        except (EOFError, OSError):  # poll() is also true when the worker died: the query ended it
            raise QueryError(f"the query ended the process that ran it (exit code {worker.process.wait()}); "
                             "it cannot run on this server") from None

    def _start(self) -> Worker:
        if self._closed:
            raise RuntimeError("the query workers are closed")
        spill = Path(tempfile.mkdtemp(prefix="worker-", dir=self.folder))
        share = "" if self._share() is None else str(self._share())
        # cwd: the spill folder, so that nothing in the server's working directory shadows a module
        return Worker(*start_child(WORKER_MAIN, [str(spill), share], cwd=spill), spill)

    def _replacement(self) -> Worker | None:
        """A new worker for a killed one's slot, started now so the next query does not wait for it."""
        try:
            return self._start()
        except (RuntimeError, OSError):
            return None  # closed, or cannot start now: the next query tries again

    def close(self) -> None:
        """Stop every idle worker (a busy one ends when its pipe closes) and remove the spill folder."""
        self._closed = True
        while True:
            try:
                worker = self._idle.get_nowait()
            except queue.Empty:
                break
            if worker is not None:
                worker.kill()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)


def _warm_up() -> None:
    """The server process's one-time costs of a first query, paid at its start as a worker's are
    before it says it is ready: opening its parsing database, and listing DuckDB's volatile
    functions for the result cache (0.2-0.3 s together). With the worker's view parsing (`main`),
    they were inside the first query's time limit: a fresh server's first answer took 0.8-1.3 s."""
    from .parse import statement_kinds

    statement_kinds("select 1")
    result_cache.repeatable("select 1")


def _remove_orphans(temporary: Path) -> None:
    """Spill folders of servers that are gone (killed: no exit handler ran), so that they do not
    pile up in the temporary directory."""
    for folder in temporary.glob(f"{SPILL_PREFIX}*-*"):
        pid = folder.name[len(SPILL_PREFIX):].split("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)


def _cache_key(spec: EngineSpec, query: str, params: list | None, limits: Limits) -> Hashable | None:
    """What makes two queries' answers the same: the engine (the store version's catalog and files,
    its settings), the text, the parameters and the limits; None when the answer may differ anyway.
    The catalog's file counts by its inode and time too: a store removed and made again at the same
    path has versions of the same numbers."""
    if not result_cache.repeatable(query):
        return None
    try:
        made = None
        if spec.catalog is not None:
            stat = os.stat(spec.catalog)
            made = (stat.st_ino, stat.st_mtime_ns)
        key = (spec, made, query, tuple(params or ()), limits.rows, limits.seconds, limits.bytes)
        hash(key)
    except (OSError, TypeError):  # no catalog file any more; a list or dict among the parameters
        return None
    return key


def _await_ready(worker: Worker) -> None:
    """Wait for a new worker's imports, which are no query's time."""
    if worker.ready:
        return
    if not said_ready(worker.conn):
        raise RuntimeError(f"a query worker did not start (exit code {worker.process.poll()})")
    worker.ready = True


# -- a child process of the server (the query workers, the OTLP commit process) -----------------

def start_child(code: str, args: list[str], cwd: Path | None = None) -> tuple[subprocess.Popen, Connection]:
    """`python -c code <socket fd> <server pid> *args`: a fresh interpreter, never a fork of the
    threaded server, and the server's end of a socket pair to it. stdout: none (DuckDB's progress
    bar drew on the server's console); stderr: the server's log."""
    ours, theirs = socket.socketpair()
    process = subprocess.Popen([sys.executable, "-c", code, str(theirs.fileno()), str(os.getpid()), *args],
                               pass_fds=[theirs.fileno()], cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    theirs.close()
    return process, Connection(ours.detach())


def said_ready(conn: Connection) -> bool:
    """Whether the child said "ready" (its imports done) within STARTUP_S."""
    try:
        return conn.poll(STARTUP_S) and conn.recv() == "ready"
    except (EOFError, OSError):
        return False


def as_child(server: int) -> None:
    """In a child: Ctrl-C in the server's terminal is the server's to handle, and the child ends
    when its server is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=end_with_server, args=(server,), daemon=True).start()


def _result(header: Any, payload: bytes | None) -> QueryResult:
    """The worker's answer as a QueryResult (its rows came as Arrow IPC), or its error raised again."""
    if header[0] == "error":
        _, name, message = header
        kind = getattr(errors, name, None)
        if isinstance(kind, type) and issubclass(kind, TracewhError) and kind is not errors.BadInputError:
            raise kind(message)
        raise RuntimeError(f"query worker: {name}: {message}")
    import pyarrow as pa

    _, columns, types, truncated = header
    return QueryResult(columns, types, arrow=pa.ipc.open_stream(payload).read_all(), truncated=truncated)


# Workers yield the CPU to the server (/health, the OTLP receiver, the commit process that makes
# new spans queryable) from their first import on: a burst of heavy queries made /health wait
# over a second, and under live ingest at nice 10 new versions' catalogs took longer (export to
# queryable p99 4.5 s against 3.1 s at 19, docs/performance.md "Eleventh stop"), queries staying
# well inside their latency target at 19. Set, not added: a worker is started by a query thread
# (itself at nice 10, service/gate.py), and os.nice would add to that. 19 is the lowest priority,
# which any process may take.
WORKER_NICENESS = 19
WORKER_MAIN = (f"import os; os.setpriority(os.PRIO_PROCESS, 0, {WORKER_NICENESS}); "
               "from tracewh.queries.isolation import main; main()")


# -- in the worker ---------------------------------------------------------------------------------

def main() -> None:
    """A worker process's entry point: `python -c WORKER_MAIN <socket fd> <server pid> <spill folder> <spill bytes>`."""
    fd, server, folder, share = sys.argv[1:5]
    as_child(int(server))
    import pyarrow  # noqa: F401 - every answer needs it: imported before the worker says it is ready

    from .registry import load_views

    load_views()  # parsing the view files (0.46 s) is no query's time either (`_warm_up` says why)
    conn = Connection(int(fd))
    conn.send("ready")
    serve(conn, Spill(Path(folder), int(share) if share else None))


def end_with_server(server: int) -> None:
    """Mid-query the socket is not read, so a worker whose server was killed (kill -9) would run
    on to its time limit, or past it in one huge call: it checks for its server instead (so does
    the OTLP commit process, service/commit_process.py)."""
    while os.getppid() == server:
        time.sleep(0.5)
    os._exit(1)


def serve(conn: Connection, spill: Spill) -> None:
    """Run each query sent on an engine kept open, answer, repeat; end when the server's end of
    the socket closes."""
    engines: OrderedDict[EngineSpec, QueryEngine] = OrderedDict()
    while True:
        try:
            spec, query, params, limits = conn.recv()
        except (EOFError, OSError):
            return
        try:
            # Arrow straight from DuckDB, whatever the caller asked: it crosses as Arrow IPC anyway
            answer(conn, _engine(engines, spec, spill).execute(query, params, replace(limits, arrow=True)))
        except TracewhError as e:
            conn.send(("error", type(e).__name__, str(e)))
        except MemoryError as e:  # outside DuckDB (Python, Arrow): the query's to fix, as DuckDB's own
            conn.send(("error", "QueryError", f"the query needs more memory than it may use ({e or 'out of memory'})"))
        except Exception as e:  # noqa: BLE001 - the server logs it as an internal error
            conn.send(("error", type(e).__name__, str(e).splitlines()[0] if str(e) else ""))


def answer(conn: Connection, result: QueryResult) -> None:
    import pyarrow as pa

    table = result.arrow()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    payload = sink.getvalue()
    conn.send(("rows", result.columns, result.types, result.truncated))
    conn.send_bytes(payload)


def _engine(engines: OrderedDict[EngineSpec, QueryEngine], spec: EngineSpec, spill: Spill) -> QueryEngine:
    """The engine for `spec`, opened once; the least recently used beyond ENGINES_KEPT are closed."""
    if spec in engines:
        engines.move_to_end(spec)
        return engines[spec]
    engine = QueryEngine(list(spec.files) if spec.files is not None else None, catalog=spec.catalog,
                         sandbox=spec.sandbox, memory_limit=spec.memory_limit, spill=spill)
    engines[spec] = engine
    while len(engines) > ENGINES_KEPT:
        engines.popitem(last=False)[1].close()
    return engine
