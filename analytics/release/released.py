"""Questions asked of the release itself, once its event shards are written: the chosen views'
rows and the counts the card shows. Both come from a query engine over the shards, not over the
store: a view in `views/` is what that view answers over the released events (only the chosen
runs, without content under `--no-content`), the same answer `tracewh ingest` of the folder gives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...queries.engine import QueryEngine
from .shards import READ_ROWS, Shard, write_shards

RUNS_LISTED = 200  # the card lists this many runs; the rest are counted


@dataclass
class Counts:
    events: int = 0
    runs: int = 0
    tasks: int = 0
    by_benchmark: list[dict[str, Any]] = field(default_factory=list)  # benchmark, runs, tasks, events
    by_kind: list[dict[str, Any]] = field(default_factory=list)  # kind, events
    by_run: list[dict[str, Any]] = field(default_factory=list)  # run_id, benchmark, tasks, events: RUNS_LISTED at most


class Released:
    """The release's events (its shards) as a store of their own, to query."""

    def __init__(self, folder: Path, shards: list[Shard]):
        self.folder = folder
        self.engine = QueryEngine([str(folder / s.path) for s in shards])

    def __enter__(self) -> Released:
        return self

    def __exit__(self, *exc: object) -> None:
        self.engine.close()

    def rows(self, query: str) -> list[dict[str, Any]]:
        return self.engine.relation(query).to_arrow_table().to_pylist()

    def counts(self) -> Counts:
        totals = self.rows("select count(*) as events, count(distinct run_id) as runs, count(distinct (run_id, task_id)) "
                           "filter (where task_id is not null) as tasks from events_raw")[0]
        return Counts(**totals, by_benchmark=self.rows(
            "select benchmark, count(distinct run_id) as runs, count(distinct (run_id, task_id)) filter "
            "(where task_id is not null) as tasks, count(*) as events from events_raw group by all order by benchmark"),
            by_kind=self.rows("select kind, count(*) as events from events_raw group by all order by kind"),
            by_run=self.rows("select run_id, any_value(benchmark) as benchmark, count(distinct task_id) as tasks, "
                             f"count(*) as events from events_raw group by run_id order by run_id limit {RUNS_LISTED}"))

    def write_views(self, names: Sequence[str], footer: dict[str, object],
                    rows_per_shard: int) -> dict[str, list[Shard]]:
        """views/<name>/part-*.parquet for each view: its rows over the released events, in a stable order."""
        written = {}
        for name in names:
            reader = self.engine.reader(f"select * from {name} order by all", rows=READ_ROWS, tables=[name])
            written[name] = write_shards(reader, reader.schema, self.folder, f"views/{name}/",
                                         footer | {"view": name}, rows_per_shard)
        return written
