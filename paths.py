"""Where tracewh keeps things by default."""

from __future__ import annotations

import os
from pathlib import Path


def default_home() -> Path:
    """$TRACEWH_HOME, else ~/.tracewh: holds the warehouse, the demo, prices.json and the capture spool."""
    return Path(os.environ.get("TRACEWH_HOME") or Path.home() / ".tracewh")


def default_warehouse() -> Path:
    return default_home() / "warehouse"
