"""The papers' headline figures for the page, drawn by Warehouse.plot (analytics/plots.py)
into a private temporary file and handed back as bytes.

pyplot keeps global state (the current figure) and is not thread-safe, while the service
answers requests on a thread pool: one figure is drawn at a time per process.
"""

from __future__ import annotations

import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...api import Warehouse

FORMATS = ("svg", "png", "pdf")
_DRAWING = threading.Lock()


@dataclass(frozen=True)
class Figure:
    kind: str  # as `tracewh plot KIND`
    title: str
    view: str  # the view it is drawn from


FIGURES = (
    Figure("rs-curves", "DELEGATE-52: reconstruction score RS@k per model", "d52_rs_at_k"),
    Figure("critical-curves", "DELEGATE-52: relays with a critical error by k", "d52_critical_by_k"),
    Figure("pareto", "DecisionBench: quality vs cost, Pareto front per condition", "dcb_quality"),
    Figure("vendor-flow", "DecisionBench: delegation flow between vendors", "dcb_vendor_flow"),
    Figure("role-accuracy", "EntCollabBench: accuracy per role and model", "ecb_role_accuracy"),
)
BY_KIND = {f.kind: f for f in FIGURES}


def drawing_lock() -> threading.Lock:
    """Held while pyplot draws (the headline figures here, the compare page's figure)."""
    return _DRAWING


def figure_bytes(wh: Warehouse, kind: str, fmt: str = "svg") -> bytes:
    with tempfile.TemporaryDirectory(prefix="tracewh-figure-") as folder, _DRAWING:
        return wh.plot(kind, Path(folder) / f"{kind}.{fmt}").read_bytes()
