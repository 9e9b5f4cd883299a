"""What a data-quality check found: the failed expectations with counts, examples and events.

Shared by both ways the suites run (compiled.py at ingest, gate.py with great-expectations
for `tracewh check`), so a refusal reads the same whichever produced it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .rules import SUITES_VERSION, Rule

EXAMPLES = 5  # example rows kept per failed expectation


@dataclass
class Failure:
    suite: str
    rule: Rule
    count: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)  # event_id, source, value; in batch order
    event_ids: list[str] = field(default_factory=list)  # failing events, in batch order (error rules: what quarantine holds)

    def describe(self) -> str:
        where = "; ".join(f"{e.get('source') or e.get('event_id')}: {e.get('value')!r}" for e in self.examples)
        return f"[{self.rule.severity}] {self.suite}: {self.rule.name} failed for {self.count} events ({self.rule.why}). e.g. {where}"


@dataclass
class Report:
    rows: int = 0
    failures: list[Failure] = field(default_factory=list)
    suites_version: str = SUITES_VERSION

    @property
    def errors(self) -> list[Failure]:
        return [f for f in self.failures if f.rule.severity == "error"]

    @property
    def failed(self) -> bool:
        return bool(self.errors)

    def reasons_by_event(self) -> dict[str, list[str]]:
        """event_id -> the error rules it broke (what quarantine keeps with it)."""
        reasons: dict[str, list[str]] = {}
        for f in self.errors:
            for event_id in f.event_ids:
                reasons.setdefault(event_id, []).append(f"{f.suite}: {f.rule.name}: {f.rule.why}")
        return reasons

    def to_text(self) -> str:
        head = f"data-quality check (suites {self.suites_version}): {self.rows} events, " \
               f"{len(self.errors)} failed expectations, {len(self.failures) - len(self.errors)} warnings"
        return "\n".join([head, *(f"  {f.describe()}" for f in self.failures)])

    def to_dict(self) -> dict[str, Any]:
        return {"suites_version": self.suites_version, "rows": self.rows, "passed": not self.failed,
                "failures": [{"suite": f.suite, "expectation": f.rule.expectation, "column": f.rule.column,
                              "severity": f.rule.severity, "why": f.rule.why, "count": f.count,
                              "examples": f.examples} for f in self.failures]}
