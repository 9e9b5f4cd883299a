"""Events held back by the data-quality gate (`ingest --quarantine`), with their reasons.

A second append-only Delta table beside the events. Its rows are written under the
writer lock just before the batch's events commit; a crash between the two leaves
held rows for a batch that is not committed, and re-ingesting that batch holds them
again (rows are deduplicated by event_id and batch key).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import TableNotFoundError

from ..schema import ARROW_SCHEMA
from .deltalog import data_files
from .sqltext import literal, literal_list

EXTRA = [pa.field("reasons", pa.list_(pa.string())), pa.field("batch_key", pa.string()),
         pa.field("suites_version", pa.string()), pa.field("quarantined_at", pa.timestamp("us", tz="UTC"))]
SCHEMA = pa.schema(list(ARROW_SCHEMA) + EXTRA)


class Quarantine:
    def __init__(self, root: Path):
        self.path = root / "quarantine"  # root: the store's resolved directory

    def files(self) -> list[str]:
        try:
            return data_files(DeltaTable(str(self.path)), self.path)
        except TableNotFoundError:
            return []

    def table(self) -> pa.Table:
        """Every held event with its reasons, in the order they were held."""
        files = self.files()
        if not files:
            return SCHEMA.empty_table()
        return duckdb.connect().sql(f"select * from read_parquet({literal_list(files)}) "
                                    "order by quarantined_at, source").to_arrow_table()

    def hold(self, staged_glob: Path, reasons: dict[str, list[str]], batch_key: str, suites_version: str) -> int:
        """Copy the staged events named in `reasons` into the quarantine; returns the rows added."""
        con = duckdb.connect()
        con.register("held", pa.table({"event_id": list(reasons), "reasons": list(reasons.values())}))
        rows = con.sql(f"""
            select s.*, h.reasons, {literal(batch_key)} as batch_key, {literal(suites_version)} as suites_version,
                   TIMESTAMPTZ {literal(datetime.now(timezone.utc).isoformat())} as quarantined_at
            from read_parquet({literal(staged_glob)}) s join held h using (event_id)""").to_arrow_table()
        stored = self.files()
        if stored:
            seen = con.sql(f"select event_id, batch_key from read_parquet({literal_list(stored)})").fetchall()
            keep = [(e, k) not in set(seen) for e, k in zip(rows["event_id"].to_pylist(), rows["batch_key"].to_pylist())]
            rows = rows.filter(pa.array(keep, pa.bool_()))
        if rows.num_rows:
            write_deltalake(str(self.path), rows.cast(SCHEMA), mode="append")
        return rows.num_rows
