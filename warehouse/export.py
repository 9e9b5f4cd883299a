"""Write stored events back out in the native format (the inverse of native ingest)."""

from __future__ import annotations

import sys
from contextlib import nullcontext
from pathlib import Path

import orjson

from .. import __version__
from ..schema import COLUMN_NAMES
from ..schema.native import dumps_event, header, open_native
from .api import Warehouse

EXPORT_BATCH_ROWS = 50_000


def export_events(wh: Warehouse, out: Path, run_ids: list[str] | None = None) -> int:
    """Stream events ordered by run and seq into `out` ('-' = stdout); returns the count."""
    query = f"select {', '.join(COLUMN_NAMES)} from events"
    params: list = []
    if run_ids:
        query += " where run_id in (select unnest(?::varchar[]))"
        params.append(run_ids)
    query += " order by run_id, seq, event_id"
    wh.create_views(query)
    reader = wh.con.execute(query, params).to_arrow_reader(EXPORT_BATCH_ROWS)
    meta = {"exported_by": f"tracewh {__version__}", "store_version": wh.version}
    target = nullcontext(sys.stdout.buffer) if str(out) == "-" else open_native(Path(out), **meta)
    count = 0
    with target as stream:
        if str(out) == "-":
            stream.write(header(**meta))
        for batch in reader:
            for event in batch.to_pylist():
                if event["payload"] is not None:
                    event["payload"] = orjson.loads(event["payload"])
                stream.write(dumps_event(event))
                count += 1
    return count
