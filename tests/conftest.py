"""Fixtures shared by the tests."""

import sys
from collections.abc import Iterator
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
