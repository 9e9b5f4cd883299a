"""Every example in the README runs as written: each ```bash block's commands in order (the tour
starts with `tracewh demo`), then each ```python block, as a new user would type them, in a
scratch home (HOME, so `~/.tracewh/demo/...` is the demo this test builds) and a scratch working
folder (so the files the tour writes land there). A command fails the test on a non-zero exit,
a traceback, or no rows where it queries the store."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"

# Blocks a test cannot run, each named by a line of it and why. Keep this short.
NOT_RUN = {
    "python3 -m venv .venv": "installs from scratch: .ci/run runs exactly this on a clean clone",
    ".venv/bin/python -m pytest": "the test suite itself (.ci/run runs it)",
    "bench/run.py": "benchmarks take minutes to hours; tests/test_bench.py runs them small",
    "rec.wrap(OpenAI())": "needs an OpenAI account; examples/delegating_orchestrator.py is its offline twin",
}
# Commands that read the store and print rows: an empty answer is a broken example.
ROWS = re.compile(r"^tracewh (sql|stats|log|views|export)\s(?!.*--out)")
# A shell variable a block sets (export W=..., T=$(...)) holds for every later command.
ASSIGNMENT = re.compile(r"^(?:export\s+)?([A-Za-z_]\w*)=")
TEXT_TABLE_FRAME = re.compile(r"^[\s┌┐└┘├┤┬┴┼─│|:\-]*$")


def blocks(language: str) -> list[str]:
    found = re.findall(rf"^```{language}\n(.*?)^```", README.read_text(), flags=re.M | re.S)
    return [b for b in found if not any(marker in b for marker in NOT_RUN)]


def commands(block: str) -> list[str]:
    """A block's shell commands: a line continues with a trailing backslash or an open quote."""
    found, current = [], ""
    for line in block.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current += line + "\n"
        try:
            shlex.split(current.replace("\\\n", " "), comments=True)
        except ValueError:  # a quote still open: the command goes on
            continue
        if not line.endswith("\\"):
            found.append(current.strip())
            current = ""
    assert not current, f"unfinished command in the README: {current}"
    return found


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> dict:
    """A home with no tracewh store yet, and a working folder laid out as a clone is where the
    README uses its files: the test data (the Inspect example ingests it) and the example rubrics."""
    home = tmp_path_factory.mktemp("home")
    work = tmp_path_factory.mktemp("work")
    (work / "tests").mkdir()
    (work / "tests" / "data").symlink_to(REPO / "tests" / "data")
    (work / "examples").symlink_to(REPO / "examples")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACEWH_")} | {
        "HOME": str(home), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return {"env": env, "work": work, "variables": []}


def shows_rows(out: str) -> bool:
    lines = [line for line in out.splitlines() if line.strip() and not TEXT_TABLE_FRAME.match(line)
             and not line.startswith(("#", "%", "<!--", "\\"))]
    return len(lines) >= 2  # a header and a row


def test_every_bash_example_runs_as_written(scratch):
    ran = []
    for block in blocks("bash"):
        for command in commands(block):
            assigned = ASSIGNMENT.match(command)
            script = "set -euo pipefail\n" + "".join(scratch["variables"]) + command
            if assigned:  # the value, once, for the commands after it
                script += f'\nprintf %s "${assigned.group(1)}"'
            result = subprocess.run(["bash", "-c", script], cwd=scratch["work"], env=scratch["env"], capture_output=True,
                                    text=True, timeout=600)
            said = f"`{command}` exited {result.returncode}:\n{result.stderr[-3000:]}"
            assert result.returncode == 0, said
            assert "Traceback" not in result.stdout + result.stderr, said
            if ROWS.match(command):
                assert shows_rows(result.stdout), f"`{command}` printed no rows:\n{result.stdout}"
            if assigned:
                assert result.stdout, f"`{command}` set {assigned.group(1)} to nothing"
                scratch["variables"].append(f"export {assigned.group(1)}={shlex.quote(result.stdout)}\n")
            ran.append(command)
    assert any(c.startswith("tracewh demo") for c in ran) and len(ran) >= 25, ran
    for written in ("cards", "table1.tex", "roles.pdf", "fidelity.parquet", "rs.pdf"):
        path = scratch["work"] / written
        assert path.exists() and (path.is_dir() or path.stat().st_size > 0), written


def test_every_python_example_runs_as_written(scratch):
    """After the bash tour: the Python examples read the demo store it built."""
    if not scratch["variables"]:  # run alone: build the demo store the bash tour starts with
        subprocess.run(["tracewh", "demo"], cwd=scratch["work"], env=scratch["env"], capture_output=True, check=True,
                       timeout=600)
    python = blocks("python")
    assert len(python) >= 2
    for block in python:
        result = subprocess.run([sys.executable, "-c", block], cwd=scratch["work"], env=scratch["env"],
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, f"{block}\nexited {result.returncode}:\n{result.stderr[-3000:]}"
