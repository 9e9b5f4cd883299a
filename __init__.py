"""tracewh: a warehouse for LLM-agent benchmark traces.

    import tracewh
    wh = tracewh.open()                      # $TRACEWH_HOME/warehouse, default ~/.tracewh/warehouse
    wh.ingest(["run.zip"], attrs={"model": "gpt-5.4"})
    wh.sql("select kind, count(*) from events group by kind").pl()
"""

__version__ = "0.1.0"

from .ingest.capture import record  # noqa: E402
from .paths import default_home, default_warehouse  # noqa: E402
from .warehouse.api import Warehouse, open  # noqa: E402

__all__ = ["Warehouse", "__version__", "default_home", "default_warehouse", "open", "record"]
