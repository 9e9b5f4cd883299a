"""One EntCollabBench run's result and trajectory rows -> events.

Result rows (docs/formats/entcollabbench.md §11) give the task and subtask outcomes, scores
and judgments; trajectory rows (§12) each task attempt's subtasks, every agent's trace
(trace.py) and the state diffs (state.py). A task attempt's events share a trace_id
derived from its winning `timestamp`, so views pick the latest attempt across archives too.
Event ids come from the attempt and the event's place in it, never from the archive, so
an archive that grew since the last ingest adds only what is new.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from posixpath import dirname
from typing import Any

from ....errors import BadInputError
from ....schema import event_id
from ...context import AdapterContext
from ...fields import Fields
from ..base import Group, Located
from .permissions import APPROVAL_AGENTS, MAX_DEPTH, auth_problem, permission_entries, specs_problem, toolsets_problem
from .records import Latest, RunFiles, TwoReadings, config, row_timestamp, stem
from .state import DEFAULT_IGNORED_FIELDS, Malformed, diff_snapshots, stored_diff_changes
from .tasks import subtask_number
from .trace import AgentLog, SubtaskScope, text_of

BENCHMARK = "entcollabbench"


def events(group: Group, ctx: AdapterContext) -> Iterator[Located]:
    yield from RunReader(group.detail, ctx).events()


def _model_name(batch_entry: Any) -> str | None:
    """The model_name of the first llm_response_meta in a trajectory row, if any. A search only:
    a value of the wrong type is passed over here, and refused, naming its field, when its row is read."""
    for sub in _list(_object(batch_entry).get("task_results")):
        for entry in _object(_object(sub).get("all_agent_traces")).values():
            for e in _list(_object(_object(entry).get("trace")).get("events")):
                e = _object(e)
                name = _object(e.get("data")).get("model_name") if e.get("event") == "llm_response_meta" else None
                if isinstance(name, str) and name:
                    return name
    return None


def _named(row: Fields, prefix: str, changes: Iterator[Any]) -> Iterator[Any]:
    """The changes, a Malformed snapshot or diff refused as bad input naming the row's field."""
    try:
        yield from changes
    except Malformed as e:
        raise row.error(prefix + e.field, e.problem) from None


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


class TaskEmitter:
    """Builds one task attempt's events: ids from the attempt and the event's place in it."""

    def __init__(self, reader: RunReader, task_id: str, trace_id: str, part: str):
        self.reader, self.task_id, self.trace_id, self.part, self.n = reader, task_id, trace_id, part, 0

    def __call__(self, kind: str, **fields: Any) -> dict[str, Any]:
        self.n += 1
        self.reader.seq += 1
        event = {"event_id": event_id(BENCHMARK, self.trace_id, self.part, self.n), "run_id": self.reader.run_id,
                 "benchmark": BENCHMARK, "kind": kind, "seq": self.reader.seq, "task_id": self.task_id,
                 "trace_id": self.trace_id, **fields}
        if event.get("model") is None:
            event["model"] = self.reader.model
        return event

    def span(self, *parts: Any) -> str:
        return event_id(self.trace_id, *parts)[:16]


class RunReader:
    def __init__(self, run: RunFiles, ctx: AdapterContext):
        self.run, self.ctx, self.seq = run, ctx, 0
        self.specs = run.specs
        self.result_rows = TwoReadings(run.result, ctx)
        self.trajectory_rows = TwoReadings(run.trajectory, ctx) if run.trajectory is not None else None
        self.results, self.subset_votes = self._scan_results()
        self.trajectories, found_model = self._scan_trajectory()
        self.model = ctx.attrs.get("model") or found_model
        if not self.model:
            raise BadInputError(run.result.display, "no model name: no trajectory with llm_response_meta events "
                                                    "beside it; pass --attr model=NAME", field="model")
        folder = dirname(run.result.name)
        label = "-".join(p for p in (folder.replace("/", "-"), stem(run.result.name)[len("result"):].strip("-_"),
                                     ctx.attrs.get("run")) if p)
        self.run_id = f"ecb-{self.model}" + (f"-{label}" if label else "")
        self.ignored = self._ignored_fields()

    def _ignored_fields(self) -> dict[str, frozenset[str]]:
        """Non-semantic fields per server: the benchmark's list plus --attr state_diff_ignore_fields[.server]=a,b."""
        def extra(key: str) -> set[str]:
            return {f.strip().lower() for f in self.ctx.attrs.get(key, "").split(",") if f.strip()}
        common = DEFAULT_IGNORED_FIELDS | extra("state_diff_ignore_fields")
        ignored = {"*": frozenset(common)}
        for key in self.ctx.attrs:
            if key.startswith("state_diff_ignore_fields."):
                ignored[key.split(".", 1)[1]] = frozenset(common | extra(key))
        return ignored

    # -- first pass: which rows win, and what the run's rows say about it ----------
    def _scan_results(self) -> tuple[Latest, Counter[str]]:
        latest, votes = Latest(), Counter()
        for r in self.result_rows.first():
            latest.offer(r.req("task_id", "string"), row_timestamp(r), r.line)
            votes[self._judged_subset(r)] += 1
        votes.pop(None, None)
        return latest, votes

    def _scan_trajectory(self) -> tuple[Latest, str | None]:
        latest, model = Latest(), None
        if self.trajectory_rows is not None:
            for t in self.trajectory_rows.first():
                latest.offer(t.req("task_id", "string"), row_timestamp(t), t.line)
                model = model or _model_name(t.record.get("batch_entry"))
        return latest, model

    @staticmethod
    def _judged_subset(r: Fields) -> str | None:
        """approval when every judged agent is an approval specialist, workflow when any is not."""
        subtasks = r.sub("judge").sub("task").each("subtasks")
        agents = {a.opt("agent_name", "string") for s in subtasks for a in s.each("agents")}
        agents.discard(None)
        if not agents:
            return None
        return "approval" if agents <= set(APPROVAL_AGENTS) else "workflow"

    # -- events ---------------------------------------------------------------
    def events(self) -> Iterator[Located]:
        result = self.run.result
        yield result, 1, self._run_event("run_attrs", payload={
            "model": self.model, "harness": "entcollabbench", "task_set": stem(result.name),
            **{k: v for k, v in self.ctx.attrs.items() if k in ("subset", "multi")}})
        yield result, 1, self._run_event("registry", payload=self._permissions())
        for spec in self.specs.values():
            yield result, 1, self._run_event("registry", task_id=spec["task_id"], payload={"name": "ecb_task_spec", **spec})
        winners = self.results.winners()
        for r in self.result_rows.again():
            if r.line in winners:
                yield from ((result, r.line, e) for e in self._result_events(r))
        if self.trajectory_rows is not None:
            yield from self._trajectory_events(self.trajectory_rows)

    def _run_event(self, kind: str, **fields: Any) -> dict[str, Any]:
        self.seq += 1
        tag = f"{fields.get('payload', {}).get('name')}/{fields.get('task_id')}"
        return {"event_id": event_id(BENCHMARK, self.run_id, kind, tag), "run_id": self.run_id, "benchmark": BENCHMARK,
                "kind": kind, "seq": self.seq, "model": self.model, **fields}

    def _permissions(self) -> dict[str, Any]:
        specs = config(self.run, "agent_specs.json", list, specs_problem)
        toolsets = config(self.run, "agent_toolsets.json", dict, toolsets_problem)
        auth = config(self.run, "mcp_auth_by_agent.json", dict, auth_problem)
        source = "archive" if (specs or toolsets) else "benchmark defaults"
        max_depth = self.ctx.attrs.get("max_depth", str(MAX_DEPTH))
        if not max_depth.isdigit():
            raise BadInputError("--attr max_depth", f"expected a whole number, got {max_depth!r}")
        return {"name": "ecb_permissions", "source": source, "max_depth": int(max_depth),
                "entries": permission_entries(specs, toolsets, auth)}

    def _trace_id(self, task_id: str, timestamp: str) -> str:
        return event_id(BENCHMARK, self.run_id, task_id, timestamp)

    def _subset(self, task_id: str, judged: str | None, n_subtasks: int) -> tuple[str, bool, str]:
        spec = self.specs.get(task_id)
        attrs = self.ctx.attrs
        if "subset" in attrs:
            subset, source = attrs["subset"], "--attr"
        elif spec:
            subset, source = spec["subset"], "task file"
        elif judged:
            subset, source = judged, "judged agents"
        elif self.subset_votes:
            subset, source = self.subset_votes.most_common(1)[0][0], "other tasks of the file"
        else:
            subset, source = "workflow", "default"
        multi = attrs["multi"].lower() == "true" if "multi" in attrs else (spec["multi"] if spec else n_subtasks > 1)
        return subset, multi, source

    def _result_events(self, r: Fields) -> Iterator[dict[str, Any]]:
        task_id, timestamp = r.req("task_id", "string"), r.req("timestamp", "string")
        emit = TaskEmitter(self, task_id, self._trace_id(task_id, timestamp), "result")
        passed = r.req("task_passed", "number")
        if passed not in (0, 1):
            raise r.error("task_passed", f"expected 0 or 1, got {passed!r}")
        judge = r.sub("judge")
        summary, verdict, runtime = judge.sub("summary"), judge.sub("task"), r.sub("runtime_summary")
        reports = verdict.each("subtasks")
        spec = self.specs.get(task_id)
        n_subtasks = (summary.opt("subtask_count", "integer") or verdict.opt("subtask_count", "integer")
                      or runtime.opt("subtask_count", "integer") or len(reports) or (spec or {}).get("n_subtasks") or 1)
        subset, multi, subset_source = self._subset(task_id, self._judged_subset(r), n_subtasks)
        run_tokens = {k: r.opt(f"run_{k}_tokens", "integer") for k in ("input", "output", "total")}
        yield emit("task_finished", ts=timestamp, parent_span_id=emit.span("task"), payload={
            "level": "task", "result_timestamp": timestamp, "passed": bool(passed), "subset": subset, "multi": multi,
            "subset_source": subset_source, "n_subtasks": n_subtasks, "session_id": runtime.opt("session_id", "string"),
            "status": runtime.opt("status", "string") or ("error" if r.opt("judge_error", "string") else None),
            "subtask_pass_count": summary.opt("subtask_pass_count", "integer"),
            "agent_eval_count": summary.opt("agent_eval_count", "integer"),
            "agent_pass_count": summary.opt("agent_pass_count", "integer"),
            "judge_tokens": {k: summary.opt(f"judge_{k}_tokens", "integer") for k in ("input", "output", "total")},
            "run_tokens": run_tokens, "tokens_by_agent": r.opt("run_tokens_by_agent", "object"),
            "judge_skipped": r.opt("judge_skipped", "boolean", False), "judge_skip_reason": r.opt("judge_skip_reason", "string"),
            "judge_error": r.opt("judge_error", "string")})
        yield emit("score", ts=timestamp, score=float(passed), parent_span_id=emit.span("task"),
                   payload={"metric": "task_pass"})
        runtime_subs, none = runtime.each("subtasks"), Fields({}, r.file, r.line)
        for i in range(max(n_subtasks, len(reports))):
            yield from self._subtask_report(emit, timestamp, i, reports[i] if i < len(reports) else none,
                                            runtime_subs[i] if i < len(runtime_subs) else none)

    def _subtask_report(self, emit: TaskEmitter, ts: str, i: int, report: Fields, rt: Fields) -> Iterator[dict[str, Any]]:
        """One subtask of a result row: the judge's report (empty when not judged) and the runtime summary."""
        raw_id = report.opt("sub_task_id", "string") or rt.opt("sub_task_id", "string")
        k = subtask_number(raw_id, i)
        reported = bool(report.record)
        agents = report.each("agents")
        passed = report.req("passed", "boolean") if reported else False
        skipped = (report.opt("skipped", "boolean", False) if reported
                   else not rt.record or rt.opt("agent_status", "string") == "skipped")
        yield emit("score", ts=ts, subtask=str(k), score=float(passed), parent_span_id=emit.span("subtask", k), payload={
            "metric": "subtask_pass", "subtask_index": k, "sub_task_id": raw_id,
            "target_agent": report.sub("task_description").opt("beginning_agent", "string") or rt.opt("target_agent", "string"),
            "judged": bool(agents), "skipped": skipped, "skip_reason": report.opt("skip_reason", "string"),
            "failure_reason": report.opt("failure_reason", "string")})
        for a in agents:
            yield self._judgment(emit, ts, k, a)

    def _judgment(self, emit: TaskEmitter, ts: str, k: int, a: Fields) -> dict[str, Any]:
        agent, passed = a.req("agent_name", "string"), a.req("passed", "boolean")
        votes = []
        for v in a.each("votes"):
            votes.append({"judge": v.opt("model", "string"), "passed": v.opt("passed", "boolean", False),
                          "confidence": v.opt("confidence", "number"), "reason": text_of(v.record.get("reason"))[:2000],
                          "error": v.opt("error", "string"), "matched_points": v.opt("matched_points", "list"),
                          "missed_points": v.opt("missed_points", "list"), "latency_ms": v.opt("latency_ms", "number"),
                          "input_tokens": v.opt("input_tokens", "integer"), "output_tokens": v.opt("output_tokens", "integer")})
        n_pass = a.opt("vote_pass_count", "integer")
        n_fail = a.opt("vote_fail_count", "integer")
        return emit("judgment", ts=ts, subtask=str(k), agent=agent, score=1.0 if passed else 0.0,
                    span_id=emit.span("judgment", k, agent), parent_span_id=emit.span("subtask", k), payload={
                        "judge": "majority", "verdict": "pass" if passed else "fail", "votes": votes,
                        "votes_pass": n_pass if n_pass is not None else sum(v["passed"] for v in votes),
                        "votes_fail": n_fail if n_fail is not None else sum(not v["passed"] for v in votes),
                        "trace_event_count": a.opt("trace_event_count", "integer"),
                        "mcp_servers_in_trace": a.opt("mcp_servers_in_trace", "list")})

    # -- trajectory -----------------------------------------------------------
    def _trajectory_events(self, trajectory: TwoReadings) -> Iterator[Located]:
        file = trajectory.file
        winners = self.trajectories.winners()
        for t in trajectory.again():
            if t.line not in winners:
                continue
            task_id = t.req("task_id", "string")
            when = self.results.timestamp(task_id) or row_timestamp(t)[0]
            emit = TaskEmitter(self, task_id, self._trace_id(task_id, when), "trajectory")
            yield from ((file, t.line, e) for e in self._attempt_events(emit, t.sub("batch_entry")))

    def _attempt_events(self, emit: TaskEmitter, b: Fields) -> Iterator[dict[str, Any]]:
        results = b.each("task_results")
        yield emit("task_started", ts=results[0].opt("request_sent_at", "string") if results else None, span_id=emit.span("task"), payload={
            "level": "task", "instruction": text_of(b.record.get("description"))[:8000],
            "session_id": b.opt("session_id", "string"), "status": b.opt("status", "string"),
            "active_servers": b.opt("active_servers", "list"), "requested_servers": b.opt("requested_servers", "list"),
            "subtask_count": b.opt("subtask_count", "integer"), "errors": [text_of(e)[:500] for e in b.opt("errors", "list", [])]})
        any_subtask_diff = False
        for i, s in enumerate(results):
            k = subtask_number(s.opt("sub_task_id", "string"), i)
            yield from self._subtask_events(emit, s, k)
            any_subtask_diff |= bool(s.opt("subtask_canonical_diff", "object"))
        initial, final = b.opt("initial_state_snapshot", "object"), b.opt("final_state_snapshot", "object")
        if initial is not None and final is not None:  # raw snapshots: the diff is ours to compute
            for change in _named(b, "", diff_snapshots(initial, final, self.ignored)):
                yield self._state_diff(emit, None, change, {"diff_source": "snapshots"})
        elif not any_subtask_diff:  # the batch-level diff would repeat the subtasks' ones
            for change, summary in _named(b, "canonical_diff.", stored_diff_changes(b.opt("canonical_diff", "object", {}))):
                yield self._state_diff(emit, None, change, {"diff_source": "canonical_diff", **summary})

    def _subtask_events(self, emit: TaskEmitter, s: Fields, k: int) -> Iterator[dict[str, Any]]:
        sub_span = emit.span("subtask", k)
        request_id = s.opt("request_id", "string") or s.sub("request_trace_scope").opt("request_id", "string") or f"subtask-{k}"
        skipped = s.opt("agent_status", "string") == "skipped" or s.opt("skipped_due_to_prior_failure", "boolean", False)
        timed_out = s.sub("timeout_recovery").opt("timed_out", "boolean", False)
        request_error = text_of(s.record.get("request_error")) or None
        status = ("skipped" if skipped else "timeout" if timed_out else "error" if request_error
                  else "ok" if s.opt("agent_status", "string") in ("ok", None) else "error")
        target = s.opt("target_agent", "string")
        yield emit("task_started", subtask=str(k), agent=target, ts=s.opt("request_sent_at", "string"), span_id=sub_span,
                   parent_span_id=emit.span("task"), payload={
                       "level": "subtask", "subtask_index": k, "sub_task_id": s.opt("sub_task_id", "string"),
                       "request_id": request_id, "instruction": text_of(s.record.get("task"))[:8000]})
        scope = SubtaskScope(str(k), request_id, sub_span, emit, emit.span)
        for agent, entry in (s.opt("all_agent_traces", "object", {}) or {}).items():
            yield from self._agent_trace(scope, s, agent, entry)
        diff = s.opt("subtask_canonical_diff", "object", {})
        if diff:
            for change, summary in _named(s, "subtask_canonical_diff.", stored_diff_changes(diff)):
                yield self._state_diff(emit, str(k), change, {"diff_source": "subtask_canonical_diff", **summary})
        inline = s.sub("inline_judge")
        duration = s.opt("duration_ms", "number")
        yield emit("task_finished", subtask=str(k), agent=target, ts=s.opt("response_received_at", "string"),
                   latency_s=duration / 1000 if duration is not None else None, parent_span_id=sub_span, payload={
                       "level": "subtask", "subtask_index": k, "status": status, "agent_status": s.opt("agent_status", "string"),
                       "skipped": skipped, "skip_reason": s.opt("skip_reason", "string"),
                       "skipped_due_to_init_failure": s.opt("skipped_due_to_init_failure", "boolean", False),
                       "flow_error": text_of(s.record.get("flow_error")) or None, "request_error": request_error,
                       "timed_out": timed_out, "inline_judge_passed": inline.opt("passed", "boolean"),
                       "inline_judge_error": text_of(s.record.get("inline_judge_error")) or None,
                       "result": text_of(s.record.get("subtask_result"))[:8000]})

    def _agent_trace(self, scope: SubtaskScope, s: Fields, agent: str, entry: Any) -> Iterator[dict[str, Any]]:
        entry = entry if isinstance(entry, dict) else {}
        if entry.get("status") == "error" or agent.startswith("_"):
            yield scope.emit("error", subtask=scope.subtask, agent=None if agent.startswith("_") else agent,
                             parent_span_id=scope.span,
                             payload={"type": "trace_fetch_error", "message": text_of(entry.get("error"))[:2000]})
            return
        trace = entry.get("trace")
        trace = Fields(trace if isinstance(trace, dict) else {}, s.file, s.line, f"{s.prefix}all_agent_traces.{agent}.trace.")
        yield from AgentLog(scope, agent).events(trace.each("events"))

    def _state_diff(self, emit: TaskEmitter, subtask: str | None, change: Any, extra: dict[str, Any]) -> dict[str, Any]:
        return emit("state_diff", subtask=subtask, payload={
            "service": change.server, "table": change.table, "key": change.row_key, "op": change.op,
            "field": change.field, "before": change.before, "after": change.after, **extra})
