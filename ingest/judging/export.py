"""`tracewh export-labels`: a rubric's labelled targets as an eval set, one row per target.

A target is labelled when a person has labelled it (its current label may be a correction).
Each row holds the target (id, run, task, model, reference), every rater's current label
(`labels`: people and LLM judges, from the `labels` view) and the whole history (`history`:
every judgment of the target under the rubric, in time order, corrected and invalid ones
included, from the `judgments` view). JSON Lines (.jsonl) or Parquet (.parquet).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from ...errors import NotFoundError, UsageError

if TYPE_CHECKING:
    from .access import WarehouseAccess

EXPORT_QUERY = """
with labelled as (
    select distinct target_id from judgments where rubric = $1 and rater_kind = 'human'
),
targets as (
    select target_id,
        any_value(target_run_id) as run_id, any_value(target_task_id) as task_id,
        any_value(target_model) as model, any_value(reference) as reference
    from judgments where rubric = $1 and target_id in (select target_id from labelled)
    group by target_id
),
current as (
    select target_id, list({'rater': rater, 'rater_kind': rater_kind, 'label': label, 'value': value,
                           'reason': reason, 'note': note, 'ts': ts, 'event_id': event_id, 'revisions': revisions}
                          order by rater_kind, rater) as labels
    from labels where rubric = $1 group by target_id
),
history as (
    select target_id, list({'rater': rater, 'rater_kind': rater_kind, 'label': label, 'value': value,
                           'valid': valid, 'reason': reason, 'note': note, 'ts': ts, 'event_id': event_id,
                           'supersedes': supersedes, 'superseded': superseded}
                          order by ts, seq, event_id) as history
    from judgments where rubric = $1 group by target_id
)
select $1 as rubric, t.target_id, t.run_id, t.task_id, t.model, t.reference, c.labels, h.history
from targets t left join current c using (target_id) join history h using (target_id)
order by t.target_id
"""


def export_labels(wh: WarehouseAccess, out: str | Path, rubric: str) -> int:
    """Write the eval set to `out` (.jsonl or .parquet); how many targets."""
    out = Path(out)
    suffix = out.suffix.lower()
    if suffix not in (".jsonl", ".parquet"):
        raise UsageError(f"{out}: export-labels writes .jsonl or .parquet")
    table = wh.sql(EXPORT_QUERY, [rubric]).to_arrow_table()
    if not table.num_rows:
        raise NotFoundError(f"no human labels for rubric {rubric!r}; `tracewh label` adds some, "
                            "`tracewh sql \"select distinct rubric from labels\"` lists rubrics")
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, out)
    else:
        with open(out, "wb") as f:
            for row in table.to_pylist():
                f.write(orjson.dumps(row, option=orjson.OPT_UTC_Z) + b"\n")
    return table.num_rows
