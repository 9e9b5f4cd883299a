"""Write stored events back out in the native format (the inverse of native ingest)."""

from __future__ import annotations

import sys
from contextlib import nullcontext
from pathlib import Path

import orjson
import pyarrow as pa

from ..schema.native import dumps_event, header, open_native
from ..version import __version__

# All events, or those of the runs given as $1 (a list, or NULL for all); run by run, in seq order.
EXPORT_QUERY = """select {columns} from events
where $1::varchar[] is null or list_contains($1::varchar[], run_id)
order by run_id, seq, event_id"""


def write_native(reader: pa.RecordBatchReader, out: Path | None, store_version: int | None) -> int:
    """Stream the reader's events into `out` (None = stdout) in the native format; returns the count."""
    meta = {"exported_by": f"tracewh {__version__}", "store_version": store_version}
    target = nullcontext(sys.stdout.buffer) if out is None else open_native(out, **meta)
    count = 0
    with target as stream:
        if out is None:
            stream.write(header(**meta))
        for batch in reader:
            for event in batch.to_pylist():
                if event["payload"] is not None:
                    event["payload"] = orjson.loads(event["payload"])
                stream.write(dumps_event(event))
                count += 1
    return count
