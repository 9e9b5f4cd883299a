"""Run the expectation suites with great-expectations over a batch of events, in chunks.

The reference meaning of the suites: `tracewh check` runs them here, and ingest's gate runs
their compiled SQL form (compiled.py), held to the same results by
tests/test_quality_parity.py. GX is imported only when a Gate is built (about two seconds,
plus two for its context).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import io
import logging
import re
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import duckdb
import pyarrow as pa

from .report import EXAMPLES, Failure, Report
from .rules import BY_KIND, CHECK_FRAME_SQL, COMMON, SUITES_VERSION, Rule

CHUNK_ROWS = 200_000


class Gate:
    """The suites as great-expectations objects, ready to validate pandas chunks."""

    def __init__(self) -> None:
        _settle_spark_connect()
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

        logging.getLogger("great_expectations").setLevel(logging.ERROR)
        context = gx.get_context(mode="ephemeral")
        context.variables.progress_bars = ProgressBarsConfig(globally=False)
        asset = context.data_sources.add_pandas("tracewh").add_dataframe_asset("batch")
        self.batches = asset.add_batch_definition_whole_dataframe("chunk")
        self.suites = {"all events": self._suite(gx, "all events", COMMON)}
        self.suites |= {kind: self._suite(gx, kind, rules) for kind, rules in BY_KIND.items()}
        self.rules = {"all events": COMMON, **BY_KIND}

    @staticmethod
    def _suite(gx: Any, name: str, rules: Iterable[Rule]) -> Any:
        import great_expectations.expectations as gxe

        suite = gx.ExpectationSuite(name=f"tracewh {name} {SUITES_VERSION}")
        for rule in rules:
            suite.add_expectation(getattr(gxe, rule.expectation)(column=rule.column, **rule.kwargs))
        return suite

    def check(self, chunks: Iterator[pa.RecordBatch]) -> Report:
        report, found = Report(), {}
        for chunk in chunks:
            frame = chunk.to_pandas()
            report.rows += len(frame)
            self._validate("all events", frame, found)
            for kind in BY_KIND:
                part = frame[frame["kind"] == kind]
                if len(part):
                    self._validate(kind, part, found)
        report.failures = list(found.values())
        return report

    def _validate(self, suite: str, frame: Any, found: dict[tuple[str, str], Failure]) -> None:
        result = self.batches.get_batch(batch_parameters={"dataframe": frame}).validate(
            self.suites[suite], result_format={"result_format": "COMPLETE",
                                               "unexpected_index_column_names": ["event_id", "source"]})
        rules = {(_snake(r.expectation), r.column): r for r in self.rules[suite]}
        for outcome in result.results:
            if outcome.success:
                continue
            config = outcome.expectation_config
            rule = rules[(config.type, config.kwargs["column"])]
            failure = found.setdefault((suite, rule.name), Failure(suite, rule))
            rows = outcome.result.get("unexpected_index_list") or []
            failure.count += outcome.result.get("unexpected_count") or len(rows)
            failure.event_ids += [r["event_id"] for r in rows]
            failure.examples += [{"event_id": r["event_id"], "source": r["source"], "value": _plain(r.get(rule.column))}
                                 for r in rows[: EXAMPLES - len(failure.examples)]]


def _settle_spark_connect() -> None:
    """Import pyspark's Connect package before GX does, where the spark extra is installed.

    GX imports it to know Spark Connect's DataFrame. Where Connect's own requirements (grpc and
    others) are missing and `__main__` has no file (`python -c`, a pytest-xdist worker), that
    import takes the process for pyspark's doctest run and ends it: sys.exit(0), so a caller's
    `check()` would return nothing and the process report success. Caught here, the package is
    marked absent, and GX meets the ImportError it meets in any other process without grpc.
    Its "Skipping doctests" line, which is not about tracewh, goes nowhere; stderr is only taken
    where that can happen, since it is the whole process's (the service's threads write to it)."""
    fileless_main = not hasattr(sys.modules.get("__main__"), "__file__")
    try:
        with contextlib.redirect_stderr(io.StringIO()) if fileless_main else contextlib.nullcontext():
            importlib.import_module("pyspark.sql.connect")
    except ImportError:
        pass  # no pyspark, or Connect's requirements missing: GX handles that itself
    except SystemExit:
        sys.modules["pyspark.sql.connect"] = None  # type: ignore[assignment]  # import raises ImportError


def _snake(class_name: str) -> str:
    """ExpectColumnValuesToNotBeNull -> expect_column_values_to_not_be_null (GX's expectation type)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", class_name).lower()


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


# One GX context per process (building it costs more than checking a small batch), used by
# one thread at a time: its batch definition holds the dataframe being validated, so two
# concurrent checks (the service ingests in a thread pool) would validate each other's rows.
_GATE_LOCK = threading.Lock()


@functools.cache
def gate() -> Gate:
    """The process's Gate; call with _GATE_LOCK held."""
    return Gate()


def check_relation(con: duckdb.DuckDBPyConnection, batch_sql: str) -> Report:
    """Check the events `batch_sql` selects (columns of the event schema plus `row_number`)."""
    con.execute(f"create or replace temp view batch as {batch_sql}")
    with _GATE_LOCK:
        return gate().check(iter(con.sql(CHECK_FRAME_SQL).to_arrow_reader(CHUNK_ROWS)))


def check_events(con: duckdb.DuckDBPyConnection) -> Report:
    """Every stored event (`events_raw` of a warehouse connection), batch by batch in source order."""
    return check_relation(con, r"""
        select *, row_number() over (order by batch_id, regexp_extract(source, '^(.*):\d+$', 1),
                                     TRY_CAST(regexp_extract(source, ':(\d+)$', 1) AS BIGINT), seq) as row_number
        from events_raw""")
