"""`tracewh demo`: generate runs of every benchmark in their real formats and ingest them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .agent_runs import write_demo_runs
from .decisionbench_runs import write_decisionbench_demo
from .delegate52_runs import write_delegate52_demo
from .entcollabbench_runs import write_entcollabbench_demo

if TYPE_CHECKING:
    from ..api import Warehouse
    from ..ingest.pipeline import IngestReport, Listener


def build_demo(root: Path, tasks: int = 40, seed: int = 7, progress: Listener | None = None) -> tuple[Warehouse, IngestReport]:
    """Write the demo runs under root/runs and ingest them into root/warehouse (a second build adds nothing)."""
    from ..api import Warehouse

    runs = root / "runs"
    paths = [*write_demo_runs(runs, tasks=tasks, seed=seed), write_delegate52_demo(runs, seed=seed),
             write_decisionbench_demo(runs, seed=seed), *write_entcollabbench_demo(runs, seed=seed)]
    wh = Warehouse(root / "warehouse")
    return wh, wh.ingest(paths, progress=progress)
