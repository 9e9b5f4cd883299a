"""The suite itself: every process that collects it names the same tests.

The README's test command runs the tests in two pytest-xdist workers, and xdist refuses to run at
all when its workers collect different test ids. Each worker collects in its own process, at its
own moment, with its own hash seed, so an id built from the clock (a gzip header's time, say) or
from a set's order passes in one process and stops CI in two.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_a_later_collection_in_another_process_names_every_test_this_one_did(request):
    ours = {item.nodeid for item in request.session.items}
    # A fresh process, seconds later (this session's own collection took that long), another hash seed.
    env = {**os.environ, "PYTHONHASHSEED": "random"}
    later = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                            "-p", "no:xdist"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert later.returncode == 0, later.stdout[-2000:] + later.stderr[-2000:]
    theirs = {line for line in later.stdout.splitlines() if "::" in line}
    assert sorted(ours - theirs) == []
