"""The expectation suites, as code: one suite for every event, one per kind, per-benchmark rules.

Rules are data here (no great-expectations import) and become GX expectations in
`gate.py`. Facts about the batch as a whole (ids unique in the batch, seq order within a
run, a DELEGATE-52 backward step carrying its score) are computed by SQL over the staged
batch into boolean columns, which the row-level expectations then check.

Bump SUITES_VERSION whenever a rule changes: reports and quarantine records carry it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...schema import KIND_NAMES

SUITES_VERSION = "2026.11.2"

KNOWN_FINISH_REASONS = (
    "stop", "length", "tool_calls", "tool_call", "function_call", "content_filter", "error", "empty",
    "end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal", "model_length", "unknown",
)


@dataclass(frozen=True)
class Rule:
    expectation: str  # great-expectations class name
    column: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    severity: str = "error"  # error: refuses the batch (or quarantines); warn: reported only
    why: str = ""

    @property
    def name(self) -> str:
        return f"{self.expectation}({self.column})"


def not_null(column: str, why: str = "") -> Rule:
    return Rule("ExpectColumnValuesToNotBeNull", column, why=why or f"{column} is required")


def at_least_zero(column: str) -> Rule:
    return Rule("ExpectColumnValuesToBeBetween", column, {"min_value": 0}, why=f"{column} cannot be negative")


def holds(flag: str, why: str) -> Rule:
    """A batch-level fact computed in CHECK_FRAME_SQL must be true on the row."""
    return Rule("ExpectColumnValuesToBeInSet", flag, {"value_set": [True]}, why=why)


COMMON = (
    not_null("event_id"), not_null("run_id"), not_null("benchmark"), not_null("seq"),
    Rule("ExpectColumnValuesToBeInSet", "kind", {"value_set": sorted(KIND_NAMES)}, why="kind must be a known kind"),
    holds("event_id_unique", "event ids are unique within a batch"),
    holds("seq_in_order", "seq increases along each source file, within a run"),
    holds("ts_plausible", "times lie between 2000-01-01 and a day from now"),
    holds("payload_valid", "payload is a valid JSON object"),
)

BY_KIND: dict[str, tuple[Rule, ...]] = {
    "llm_call": (
        *map(at_least_zero, ("prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens",
                             "cost_usd", "latency_s")),
        Rule("ExpectColumnValuesToBeInSet", "finish_reason", {"value_set": list(KNOWN_FINISH_REASONS)},
             severity="warn", why="finish_reason outside the known vocabulary (flagged, not refused)"),
        holds("d52_backward_scored", "a DELEGATE-52 backward step carries a score"),
    ),
    "tool_call": (not_null("tool_name"), at_least_zero("latency_s")),
    "tool_result": (at_least_zero("latency_s"),),
    "delegation": (at_least_zero("cost_usd"), at_least_zero("latency_s")),
    "task_finished": (at_least_zero("cost_usd"), at_least_zero("latency_s")),
    "score": (holds("score_present", "a score event carries a score (Inspect's unscored samples excepted)"),
              holds("score_in_range", "scores lie in [0, 1] (Inspect's scores excepted: any number is legitimate there)")),
    "judgment": (Rule("ExpectColumnValuesToBeBetween", "score", {"min_value": 0, "max_value": 1},
                      why="scores lie in [0, 1]"),
                 holds("ecb_votes_present", "an EntCollabBench judgment carries its votes")),
}

CHECKED_COLUMNS = ("prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens", "cost_usd",
                   "latency_s", "finish_reason", "tool_name", "score")

# Over a relation `batch` of events (with `row_number`, their order in the batch): the
# columns the rules check, one row per event (CHECK_FRAME_SQL: in batch order). The facts
# read from payloads come first, in `narrow`, so the operators after it carry a few small
# columns, never the payloads (carrying them made the gate of a 1.9M-event batch spill: 41 s
# of CPU). The two batch-level facts are found as the (usually no) rows that break them:
# repeated ids by a hash aggregate, rows out of order by a window over five columns. A window
# over the whole frame for each held up to the connection's whole memory limit and spilled
# (the gate of a 15M-event batch: 70 s, and 1 GB of DuckDB memory; now 13 s).
CHECK_COLUMNS_SQL = f"""
with narrow as not materialized (
    select
        row_number, event_id, run_id, benchmark, kind, seq, source, {", ".join(CHECKED_COLUMNS)},
        -- = regexp_extract(source, '^(.*):\\d+$', 1) (the file part of `file:line`), in half the time
        case when source is null then null
             when regexp_matches(source, '^.*:\\d+$') then regexp_replace(source, ':\\d+$', '')
             else '' end as source_file,
        ts is null or ts between TIMESTAMPTZ '2000-01-01' and now() + interval 1 day as ts_plausible,
        payload is null or (json_valid(payload) and json_type(payload) = 'OBJECT') as payload_valid,
        benchmark = 'delegate52' and kind = 'llm_call' and payload ->> '$.harness' = 'relay'
            and payload ->> '$.direction' = 'backward' as d52_backward,
        not (benchmark = 'entcollabbench' and kind = 'judgment') or (payload -> '$.votes') is not null as ecb_votes_present
    from batch),
-- ids that repeat: on 64-bit hashes first (8 bytes a row), then on the ids whose hash repeats
repeated_hashes as (select hash(event_id) as h from narrow group by h having count(*) > 1),
repeated_ids as (select event_id from narrow where hash(event_id) in (select h from repeated_hashes)
                 group by event_id having count(*) > 1),
-- rows whose seq is not above the one before them in their file and run (run_attrs apart)
out_of_order as (
    select row_number from (
        select row_number, kind, seq,
               lag(seq) over (partition by source_file, run_id, kind = 'run_attrs' order by row_number) as previous
        from narrow)
    where not coalesce(kind = 'run_attrs' or seq > previous, true))
select
    row_number, event_id, run_id, benchmark, kind, seq, source, {", ".join(CHECKED_COLUMNS)},
    -- null ids group together (and hash alike), as a window over the ids counts them
    case when event_id is null then not exists (select 1 from repeated_ids where event_id is null)
         else event_id not in (select event_id from repeated_ids where event_id is not null) end as event_id_unique,
    row_number not in (select row_number from out_of_order) as seq_in_order,
    ts_plausible,
    payload_valid,
    -- a hash join (run_id and seq are required, never null), where a correlated exists was planned as a delim join
    not d52_backward or coalesce((run_id, seq + 9999) in (select run_id, seq from batch where kind = 'score'), false)
      as d52_backward_scored,
    ecb_votes_present,
    kind <> 'score' or score is not null or benchmark = 'inspect' as score_present,
    kind <> 'score' or score is null or score between 0 and 1 or benchmark = 'inspect' as score_in_range
from narrow
"""
CHECK_FRAME_SQL = CHECK_COLUMNS_SQL + "order by row_number\n"
