"""Test helpers: run the real `tracewh` command, build native-format inputs."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracewh.schema.native import dumps_event, header

if TYPE_CHECKING:
    from fastapi.testclient import TestClient

# Real third-party fixture files, each with its licence beside it (see data/README.md).
DATA = Path(__file__).parent / "data"


@dataclass
class Result:
    code: int
    out: str
    err: str


def tracewh(*args: str | Path, env: dict[str, str] | None = None, check: bool = False,
            cwd: Path | None = None) -> Result:
    """Run the installed CLI in a fresh process, as a user would."""
    proc = subprocess.run([sys.executable, "-m", "tracewh", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=300, cwd=cwd)
    result = Result(proc.returncode, proc.stdout, proc.stderr)
    if check and proc.returncode != 0:
        raise AssertionError(f"tracewh {' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stderr}")
    return result


def native_lines(events: list[dict[str, Any]]) -> bytes:
    return header() + b"".join(dumps_event(e) for e in events)


def write_native(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_bytes(native_lines(events))
    return path


def write_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def zip_folder(folder: Path, out: Path) -> Path:
    """Every file under `folder` into the zip `out`, named relative to the folder: a run as labs ship it."""
    out.parent.mkdir(parents=True, exist_ok=True)
    return write_zip(out, {f.relative_to(folder).as_posix(): f.read_bytes() for f in sorted(folder.rglob("*"))
                           if f.is_file()})


def llm_call(run_id: str, seq: int, **fields: Any) -> dict[str, Any]:
    return {"run_id": run_id, "benchmark": "custom", "kind": "llm_call", "seq": seq, **fields}


def store_version(wh: Path) -> int | None:
    from tracewh.warehouse.store import Store

    return Store(wh).version()


def plain(text: str) -> str:
    """Terminal output without rich's box drawing and line wrapping, for matching messages."""
    import re

    return " ".join(re.sub(r"[\u2500-\u257f]", " ", text).split())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(warehouse: Path | str, *args: str, token: str | None = None, cwd: Path | None = None,
            ingest_ready: bool = False) -> Iterator[str]:
    """`tracewh serve` as a real process on a free loopback port; yields its base URL once it answers
    (`ingest_ready`: once /health says its OTLP committer has loaded, as a readiness probe waits)."""
    import httpx

    port = free_port()
    env = os.environ | ({"TRACEWH_SERVICE_TOKEN": token} if token else {})
    server = subprocess.Popen([sys.executable, "-m", "tracewh", "serve", "--port", str(port), "-w", str(warehouse), *args],
                              env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):  # bounded wait for start-up
            if server.poll() is not None:
                raise AssertionError(f"tracewh serve exited {server.returncode}: {server.stderr.read().decode()}")
            try:
                if httpx.get(f"{base}/health", timeout=1).json()["ingest_ready"] or not ingest_ready:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)


def watched_page(browser: Any, base: str, **options: Any) -> Any:
    """A page in a fresh browser context (1500x950) that records what a web test asserts is
    absent afterwards: dialogs opened, requests to anywhere but `base`, CSP violations."""
    context = browser.new_context(viewport={"width": 1500, "height": 950}, **options)
    context.set_default_timeout(30_000)
    page = context.new_page()
    page.dialogs, page.elsewhere, page.refused = [], [], []
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: page.elsewhere.append(r.url) if not r.url.startswith((base, "data:")) else None)
    page.on("console", lambda m: page.refused.append(m.text) if "Content Security Policy" in m.text else None)
    return page


def labels_committed(store: Path, seconds: float = 30) -> None:
    """Until the service's labels spool holds nothing: it answers a label once it is fsynced there
    and commits it in the background (#34); a segment goes once all it holds is committed."""
    import time

    deadline = time.monotonic() + seconds
    while any((Path(store) / "_spool" / "labels").glob("*.wal")):
        assert time.monotonic() < deadline, "the labels spool was not committed"
        time.sleep(0.02)


@contextmanager
def service_clients() -> Iterator[Callable[..., TestClient]]:
    """A maker of in-process services: `make(store, headers=None, **config)` is a client (that follows
    no redirect and sends `headers`) of a service over `store`, `config` being ServiceConfig's. Their
    query workers stop as the block ends: a TestClient used without `with` never runs the service's
    shutdown, and each idle worker (about 120 MB) would live until pytest ends."""
    # Imported here: the service takes 1.2 s to import, which a test module without one need not pay
    from fastapi.testclient import TestClient

    from tracewh.service.app import create_app
    from tracewh.service.config import ServiceConfig

    made: list[TestClient] = []

    def make(store: Path, headers: dict[str, str] | None = None, raise_server_exceptions: bool = True,
             **config: Any) -> TestClient:
        made.append(TestClient(create_app(ServiceConfig(store, **config)), base_url="http://127.0.0.1",
                               headers=headers, follow_redirects=False,
                               raise_server_exceptions=raise_server_exceptions))
        return made[-1]

    try:
        yield make
    finally:
        for client in made:
            client.app.state.query_workers.close()  # what the service's shutdown does
