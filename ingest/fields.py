"""Typed access to a raw source record, with errors naming file, line and field."""

from __future__ import annotations

from typing import Any

from ..errors import BadInputError
from .values import KINDS, BadValue, checker

_CHECKS = {kind: checker(kind) for kind in KINDS}
# (kind, exact type) pairs that pass their check with nothing more to look at: most values
# adapters read. A float "number" still goes through the check (it must be finite), as does
# any subclass (bool is an int to Python, not to JSON).
_PLAIN = {("string", str), ("integer", int), ("number", int), ("boolean", bool), ("list", list), ("object", dict)}


class Fields:
    """`Fields(record, file, line).req("round_trip_num", "integer")`: value or a clear error."""

    __slots__ = ("record", "file", "line", "prefix")

    def __init__(self, record: dict[str, Any], file: str, line: int | None, prefix: str = ""):
        self.record, self.file, self.line, self.prefix = record, file, line, prefix

    def error(self, key: str, problem: str) -> BadInputError:
        return BadInputError(self.file, problem, line=self.line, field=self.prefix + key)

    # req and opt run for every field adapters read: plain values return before any call.
    def req(self, key: str, kind: str) -> Any:
        value = self.record.get(key)
        if value is None:
            raise self.error(key, "required field is missing")
        if (kind, value.__class__) in _PLAIN:
            return value
        try:
            return _CHECKS[kind](value)
        except BadValue as e:
            raise self.error(key, str(e)) from None

    def opt(self, key: str, kind: str, default: Any = None) -> Any:
        value = self.record.get(key)
        if value is None:
            return default
        if (kind, value.__class__) in _PLAIN:
            return value
        try:
            return _CHECKS[kind](value)
        except BadValue as e:
            raise self.error(key, str(e)) from None

    def sub(self, key: str) -> Fields:
        """Fields of a nested object (missing = empty)."""
        return Fields(self.opt(key, "object", {}), self.file, self.line, f"{self.prefix}{key}.")

    def each(self, key: str) -> list[Fields]:
        """Fields of every element of a nested list (missing = none; an element that is not an
        object reads as empty, so its required fields are reported missing under `key[i].`)."""
        return [Fields(item if isinstance(item, dict) else {}, self.file, self.line, f"{self.prefix}{key}[{i}].")
                for i, item in enumerate(self.opt(key, "list", []))]
