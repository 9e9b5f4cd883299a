"""tracewh: a warehouse for LLM-agent benchmark traces.

    import tracewh
    wh = tracewh.open()                      # $TRACEWH_HOME/warehouse, default ~/.tracewh/warehouse
    wh.ingest(["run.zip"], attrs={"model": "gpt-5.4"})
    wh.sql("select kind, count(*) from events group by kind").pl()

Names are loaded on first use, so `import tracewh` (and `tracewh --help`) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .version import __version__

if TYPE_CHECKING:
    from .api import QueryResult, Warehouse, open, record
    from .ingest.capture.recorder import Recorder
    from .paths import default_home, default_warehouse

_EXPORTS = {"Warehouse": ".api", "QueryResult": ".api", "open": ".api", "record": ".api",
            "Recorder": ".ingest.capture.recorder", "default_home": ".paths", "default_warehouse": ".paths"}
__all__ = ["QueryResult", "Recorder", "Warehouse", "__version__", "default_home", "default_warehouse", "open", "record"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'tracewh' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(_EXPORTS[name], __name__), name)
