"""The logs of one eval -> events of one run (docs/formats/inspect.md §11).

run_id is `inspect:<eval_id>`. Every event id is derived from the log's content (eval_id,
sample id, epoch, the event's place in the transcript), never from the batch: ingesting a log
again, alone or in another folder, adds nothing, and a finished log ingested after its
in-progress copy adds only what is new. Per log: one `run_attrs` (its header), the samples'
events (sample.py), and one run-level `score` per metric the log reports.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from ....errors import BadInputError
from ...context import AdapterContext
from ...fields import Fields
from ..base import Group, Located
from .ids import BENCHMARK, RunIds, sample_key
from .records import Log, samples
from .sample import SampleEvents
from .scores import metric_scorer, name_text, raw, value_to_float


def events(group: Group, ctx: AdapterContext) -> Iterator[Located]:
    logs: list[Log] = group.detail
    run = Run(logs[0], ctx)
    for log in logs:  # most complete first; what a later copy repeats is skipped
        yield from run.read(log)


class Run(RunIds):
    """The run read from its logs, most complete first."""

    def __init__(self, first: Log, ctx: AdapterContext):
        super().__init__(first, ctx)
        self.seen: set[Any] = set()  # samples, metrics and attributes already read from another copy

    def read(self, log: Log) -> Iterator[Located]:
        attrs = self._attrs(log)
        if attrs["event_id"] not in self.seen:
            self.seen.add(attrs["event_id"])
            yield log.file, 0, attrs
        # The metrics are the header's (line 0), so they come before the samples in seq as in the
        # file: seq increases along each source file, as `tracewh check` verifies.
        for event in self._metrics(log):
            yield log.file, 0, event
        scorers = [s.get("name") for s in log.fields.sub("eval").opt("scorers", "list", []) if isinstance(s, dict)]
        for n, where, raw_sample in samples(log, self.ctx):
            key = ("sample", *sample_key(raw_sample, where))
            if key in self.seen:
                continue
            self.seen.add(key)
            for event in SampleEvents(self, raw_sample, where, scorers).events():
                yield log.file, n, event

    # -- the header ----------------------------------------------------------------

    def _attrs(self, log: Log) -> dict[str, Any]:
        h = log.fields
        attrs = {"harness": "inspect_ai", "log_format": log.format.removeprefix("inspect-"),
                 "log_version": h.req("version", "integer"), **self._identity(h.sub("eval")),
                 **_setup(h.sub("eval"), h.sub("plan")), **_outcome(h, log.status)}
        # nulls left out at every depth: `runs` merges attributes as JSON merge patches, where a
        # null deletes a key (and engines differ on nested ones)
        attrs = {k: v for k, v in _without_nulls(attrs).items() if v not in ([], {})}
        try:
            digest = orjson.dumps(attrs, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)
        except TypeError as e:  # an integer past 64 bits, say: no event could store it either
            raise BadInputError(log.where, f"the log's header cannot be stored as JSON: {e}", field="eval") from None
        # `runs` merges a run's attributes by (ts, seq): a finished log's win over its in-progress
        # copy's, also at equal times (Inspect's times have whole seconds)
        ts = attrs.get("completed_at") or attrs.get("started_at") or attrs.get("created")
        return {"event_id": self.key_id("attrs", digest.decode()), "run_id": self.run_id, "benchmark": BENCHMARK,
                "kind": "run_attrs", "seq": 0 if log.status == "started" else 1, "ts": ts, "model": self.model,
                "payload": attrs}

    def _identity(self, spec: Fields) -> dict[str, Any]:
        """Which eval: task, model and Inspect's ids."""
        return {"task": spec.req("task", "string"), "task_version": spec.record.get("task_version"),
                "task_display_name": spec.opt("task_display_name", "string"),
                "task_file": spec.opt("task_file", "string"), "task_args": spec.opt("task_args", "object"),
                "inspect_task_id": spec.opt("task_id", "string"), "eval_id": spec.opt("eval_id", "string"),
                "inspect_run_id": spec.opt("run_id", "string"), "eval_set_id": spec.opt("eval_set_id", "string"),
                "model": self.model, "model_args": spec.opt("model_args", "object"),
                "model_generate_config": spec.opt("model_generate_config", "object"),
                "model_base_url": spec.opt("model_base_url", "string"),
                "model_roles": _roles(spec.record.get("model_roles")), "created": spec.opt("created", "string")}

    def _metrics(self, log: Log) -> Iterator[dict[str, Any]]:
        """One run-level score per metric in `results` (docs §5), as the log reports it."""
        h = log.fields
        ts = h.sub("stats").opt("completed_at", "string") or None
        for es in h.sub("results").each("scores"):
            scorer, reducer = metric_scorer(es.record), es.opt("reducer", "string")
            for metric, value in _metrics_of(es):
                key = ("metric", name_text(es.record.get("name")), name_text(es.record.get("scorer")), reducer, metric)
                if key in self.seen:
                    continue
                self.seen.add(key)
                yield self.emit("score", key, ts=ts, model=self.model, score=value_to_float(value.get("value")),
                                payload={"level": "run", "scorer": scorer, "metric": metric,
                                         "metric_name": value.get("name"), "reducer": reducer,
                                         "value": raw(value.get("value")), "params": value.get("params") or None,
                                         "scored_samples": es.opt("scored_samples", "integer"),
                                         "unscored_samples": es.opt("unscored_samples", "integer")})


def _setup(spec: Fields, plan: Fields) -> dict[str, Any]:
    """How the eval ran: dataset, solver, configuration, code."""
    dataset, steps = spec.sub("dataset"), [s.record.get("solver") for s in plan.each("steps")]
    return {"dataset": dataset.opt("name", "string"), "dataset_location": dataset.opt("location", "string"),
            "dataset_samples": dataset.opt("samples", "integer"),
            "solver": spec.opt("solver", "string") or ", ".join(map(str, steps)) or None,
            "solver_args": spec.opt("solver_args", "object"), "plan": steps,
            "config": spec.opt("config", "object"), "generate_config": plan.opt("config", "object"),
            "revision": spec.opt("revision", "object"), "packages": spec.opt("packages", "object"),
            "tags": spec.record.get("tags"), "metadata": spec.record.get("metadata")}


def _outcome(h: Fields, status: str) -> dict[str, Any]:
    """How it ended: status, error, times, sample counts, usage (all attempts, all roles)."""
    stats, results = h.sub("stats"), h.sub("results")
    outcome = {"status": status, "error": h.sub("error").opt("message", "string"),
               "started_at": stats.opt("started_at", "string") or None,
               "completed_at": stats.opt("completed_at", "string") or None,
               "total_samples": results.opt("total_samples", "integer"),
               "completed_samples": results.opt("completed_samples", "integer"),
               "model_usage": stats.opt("model_usage", "object"), "role_usage": stats.opt("role_usage", "object")}
    # the log's own tags and metadata include later edits (log_updates), the spec's do not
    return outcome | {k: h.record[k] for k in ("tags", "metadata") if h.record.get(k)}


def _metrics_of(es: Fields) -> list[tuple[str, dict[str, Any]]]:
    """(metric, EvalMetric) of one EvalScore: `metrics` is keyed by unique metric name (a list in
    logs that predate that)."""
    metrics = es.record.get("metrics")
    if isinstance(metrics, dict):
        return [(str(k), m) for k, m in metrics.items() if isinstance(m, dict)]
    if isinstance(metrics, list):
        return [(str(m.get("name")), m) for m in metrics if isinstance(m, dict)]
    return []


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _roles(roles: Any) -> Any:
    """Model roles as {role: model}: a ModelConfig per role (or, in some logs, a list of them)."""
    if isinstance(roles, dict):
        return {role: config.get("model") if isinstance(config, dict) else config for role, config in roles.items()}
    return roles
