"""One sample x epoch -> events (docs/formats/inspect.md §6; the mapping is §11).

Every event of a sample has task_id = the sample id (as text, as Inspect compares ids),
subtask `epoch-<n>`, one trace per (sample, epoch), and `epoch` in its payload. In order:
each retried attempt (what Inspect kept of its transcript, then its `error`, all marked
`retry`), the final attempt's transcript, one `score` per scorer (per key of a dict score),
the sample's `error`, and last its `task_finished`, whose span is the root of the sample's tree.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ...fields import Fields
from .ids import RunIds, SampleIds
from .scores import raw, sample_scores, value_to_float
from .transcript import Transcript

CANCELLED = ("CancelledError(", "Cancelled(")  # inspect_ai._util.error.is_cancellation_message
EXCEPTION_TYPE = re.compile(r"^([A-Za-z_][\w.]*)\(")


class SampleEvents(SampleIds):
    def __init__(self, run: RunIds, raw_sample: dict[str, Any], where: str, scorers: list[str]):
        super().__init__(run, raw_sample, where)
        self.f = Fields(raw_sample, where, None)
        self.scorers = scorers  # the eval's scorer names, for a version-1 `score`

    def events(self) -> Iterator[dict[str, Any]]:
        for n, attempt in enumerate(self.f.each("error_retries"), start=1):
            yield from self._retry(n, attempt)
        transcript = Transcript(self, self._transcript_events(), self.root)
        yield from transcript.convert()
        yield from self._scores(transcript)
        error = self.f.opt("error", "object")
        if error is not None:
            yield self._error(("error",), error, transcript.error_time or self.f.opt("completed_at", "string"),
                              self.span("error"))
        yield self._finished(transcript, error)

    def _transcript_events(self) -> list[Fields]:
        if "events" in self.f.record or "transcript" not in self.f.record:
            return self.f.each("events")
        return self.f.sub("transcript").each("events")  # log version 1: transcript {events, content}

    def _retry(self, n: int, attempt: Fields) -> Iterator[dict[str, Any]]:
        """A failed attempt that was retried: the tail of its transcript Inspect kept (from its
        last model call on: docs §6, "Retried samples"), then its error, the tail's root."""
        root, events = self.span("retry", n), attempt.each("events")
        tail = Transcript(self, events, root, retry=n)
        yield from tail.convert()
        last = events[-1].opt("timestamp", "string") if events else None
        yield self._error(("retry", n, "error"), attempt.record, tail.error_time or last, root, retry=n)

    def _error(self, key: tuple, error: dict[str, Any], ts: str | None, span: str, *,
               retry: int | None = None) -> dict[str, Any]:
        message = self.content.resolve(error.get("message"))
        found = EXCEPTION_TYPE.match(message) if isinstance(message, str) else None
        payload = {"type": found.group(1) if found else None, "message": message,
                   "traceback": self.content.resolve(error.get("traceback")),
                   "cancelled": isinstance(message, str) and message.startswith(CANCELLED)}
        if retry is not None:
            payload = {"retry": retry, **payload}
        return self.emit("error", key, ts=ts, model=self.run.model, span_id=span, parent_span_id=self.root,
                         payload=payload)

    def _scores(self, transcript: Transcript) -> Iterator[dict[str, Any]]:
        for name, score in self._score_dict().items():
            if not isinstance(score, dict):
                raise self.f.error(f"scores.{name}", f"expected a Score object, got {type(score).__name__}")
            ts = transcript.score_times.get(name) or self.f.opt("completed_at", "string")
            for scorer, key, value in sample_scores(name, score):
                yield self.emit("score", ("score", scorer), ts=ts, model=self.run.model, score=value_to_float(value),
                                span_id=self.span("score", scorer), parent_span_id=self.root,
                                payload={"level": "sample", "metric": scorer, "scorer": scorer, "key": key,
                                         "value": raw(value), "answer": self.content.resolve(score.get("answer")),
                                         "explanation": self.content.resolve(score.get("explanation")),
                                         "reason": score.get("reason"), "metadata": raw(score.get("metadata"))})

    def _score_dict(self) -> dict[str, Any]:
        scores = self.f.opt("scores", "object")
        if not scores and isinstance(self.f.record.get("score"), dict):  # log version 1: one `score`
            return {self.scorers[0] if self.scorers else "score": self.f.record["score"]}
        return scores or {}

    def _finished(self, transcript: Transcript, error: dict[str, Any] | None) -> dict[str, Any]:
        f = self.f
        message = error.get("message") if error else None
        status = "ok" if error is None else "cancelled" if str(message).startswith(CANCELLED) else "error"
        return self.emit(
            "task_finished", ("finished",), ts=f.opt("completed_at", "string") or f.opt("started_at", "string"),
            model=self.run.model, span_id=self.root, latency_s=f.opt("total_time", "number"),
            payload={"status": status, "started_at": f.opt("started_at", "string"),
                     "completed_at": f.opt("completed_at", "string"), "working_time": f.opt("working_time", "number"),
                     "turn_count": f.opt("turn_count", "integer"), "retries": len(f.opt("error_retries", "list", [])),
                     "limit": f.opt("limit", "object"), "uuid": f.opt("uuid", "string"),
                     "input": self.content.resolve(f.record.get("input")),
                     "target": self.content.resolve(f.record.get("target")), "metadata": f.opt("metadata", "object"),
                     "events": dict(transcript.counts)})
