"""Fixtures shared by the tests."""

import fcntl
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def wh(tmp_path: Path) -> Path:
    return tmp_path / "wh"


@pytest.fixture
def run(capsys, monkeypatch):
    """`tracewh ARGS` through the command's own entry point (argument parsing, the error-to-exit-code
    mapping, output), in this process: a fresh process per call would cost a second of start-up."""
    from helpers import Result

    from tracewh.cli.app import main

    def run(*args: str | Path, check: bool = False) -> Result:
        monkeypatch.setattr("sys.argv", ["tracewh", *map(str, args)])
        with pytest.raises(SystemExit) as exited:
            main()
        out, err = capsys.readouterr()
        result = Result(exited.value.code, out, err)
        assert not check or result.code == 0, result.err
        return result
    return run


@pytest.fixture
def new_service() -> Iterator[Any]:
    """`new_service(store, headers=None, **config)`: a client of an in-process service over `store`
    (helpers.service_clients); the query workers of every service a test made stop after it."""
    from helpers import service_clients

    with service_clients() as make:
        yield make


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium driven by Playwright (its own browser download is blocked), one per test
    module: the web page's tests and the review queue's."""
    bench = str(Path(__file__).resolve().parents[1] / "bench")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    from web_trace import chromium, launch

    executable = chromium()
    if executable is None:
        pytest.skip("no chromium found: apt-get install chromium (or set TRACEWH_CHROMIUM=/path/to/chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch(p, executable)
        yield browser
        browser.close()


# The README's test command runs the test files in two processes (pytest-xdist). A test whose
# assertion is a time bound ("queryable within 2 s", "answers within its limit") is marked
# `exclusive` and runs alone: it holds a lock every other test holds shared. A test waiting for it
# takes a turnstile first, which the next tests queue at, so the other process cannot starve it.
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # noqa: ANN001, ANN201 - pytest's hook signature
    run = getattr(item.config, "workerinput", {}).get("testrunuid")  # set by xdist in its workers only
    exclusive = item.get_closest_marker("exclusive") is not None
    with nullcontext() if run is None else _alone_or_shared(Path(tempfile.gettempdir()) / f"tracewh-tests-{run}",
                                                            exclusive):
        yield


@contextmanager
def _alone_or_shared(prefix: Path, exclusive: bool) -> Iterator[None]:
    with open(f"{prefix}.turnstile", "a") as turnstile, open(f"{prefix}.tests", "a") as tests:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(tests, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        if not exclusive:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        yield
