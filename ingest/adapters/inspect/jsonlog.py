"""Inspect's `.json` logs, streamed: one big JSON object whose `samples` list is read an item at a time.

Why not ijson: Inspect writes non-finite scores as the bare tokens `NaN`, `Infinity` and
`-Infinity` (docs/formats/inspect.md §3), which ijson's parsers refuse (Inspect itself falls
back to reading the whole file when its ijson header read hits one). Python's own decoder
accepts them, so this walks the top-level object and the one array it streams, and hands
every member value and every array item to `json.JSONDecoder.raw_decode`: the decoding is the
standard library's, only the `{ "key": value, ... }` and `[item, ...]` punctuation around it is
read here. Memory holds one value at a time (plus a read buffer), capped at the record limit.
"""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Iterator
from typing import Any, BinaryIO

from ....errors import BadInputError

CHUNK = 1 << 20  # characters read at a time
WHITESPACE = " \t\n\r"


class TopLevelObject:
    """Pull reader over a JSON object: `for key in obj.keys():` then exactly one of
    `obj.value()` or `for item in obj.items():` per key (a key left unread is skipped)."""

    def __init__(self, stream: BinaryIO, display: str, max_value_chars: int):
        self.text = io.TextIOWrapper(stream, encoding="utf-8")
        self.display, self.limit = display, max_value_chars
        self.decoder = json.JSONDecoder()
        self.buf, self.pos, self.eof = "", 0, False
        self.consumed = 0  # characters dropped from the buffer so far (progress)
        self._pending = False  # a key was yielded and its value not read yet
        self.key: str | None = None  # the key being read, for errors

    def close(self) -> None:
        self.text.close()

    @property
    def position(self) -> int:
        """Characters read past so far."""
        return self.consumed + self.pos

    def keys(self) -> Iterator[str]:
        self._expect("{", "a JSON object")
        first = True
        while True:
            if self._pending:
                self.value()  # the caller did not want it: decode and drop
            if self._next_char("'}' or another key") == "}":
                self.pos += 1
                return
            if not first:
                self._expect(",", "',' between keys")
            first = False
            self._next_char("a key")
            key = self._decode("a key")
            if not isinstance(key, str):
                raise self._error(f"expected a key, got {type(key).__name__}")
            self._expect(":", "':' after a key")
            self._pending, self.key = True, key
            yield key

    def value(self) -> Any:
        self._pending = False
        self._next_char(f"the value of {self.key!r}")
        return self._decode(f"the value of {self.key!r}")

    def items(self) -> Iterator[Any]:
        """The items of the array under the key just yielded, decoded one at a time."""
        self._pending = False
        self._expect("[", "a JSON array")
        for index in itertools.count():
            what = f"item {index} of {self.key!r}"
            if self._next_char(f"']' or {what}") == "]":
                self.pos += 1
                return
            if index:
                self._expect(",", f"',' before {what}")
                self._next_char(what)
            yield self._decode(what)

    # -- reading -------------------------------------------------------------------

    def _error(self, problem: str) -> BadInputError:
        return BadInputError(self.display, f"invalid JSON at character {self.position}: {problem}")

    def _more(self) -> bool:
        """Append the next chunk (at least as much as is buffered: one value is re-decoded from
        its start after each append, so growing geometrically keeps that linear)."""
        if self.eof:
            return False
        if self.pos > CHUNK:  # drop what is decoded before growing
            self.consumed += self.pos
            self.buf, self.pos = self.buf[self.pos:], 0
        try:
            chunk = self.text.read(max(CHUNK, len(self.buf) - self.pos))
        except UnicodeDecodeError as e:
            raise BadInputError(self.display, f"not valid UTF-8 (byte {e.start} of a chunk near character "
                                              f"{self.position})") from None
        self.buf += chunk
        self.eof = not chunk
        return bool(chunk)

    def _next_char(self, what: str) -> str:
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in WHITESPACE:
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more():
                raise self._error(f"the file ends where {what} should be (truncated?)")

    def _expect(self, char: str, what: str) -> None:
        if self._next_char(what) != char:
            raise self._error(f"expected {what}, found {self.buf[self.pos:self.pos + 20]!r}")
        self.pos += 1

    def _decode(self, what: str) -> Any:
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buf, self.pos)
                # a number or literal at the very end of the buffer may continue in the next chunk
                if end < len(self.buf) or self.eof:
                    self.pos = end
                    return value
            except json.JSONDecodeError as e:
                if self.eof:
                    raise self._error(f"{e.msg.removesuffix(' starting at')} in {what} (truncated or corrupt)") from None
            except RecursionError:  # Python's decoder recurses once per level of nesting
                raise self._error(f"{what} nests too deep to read") from None
            if len(self.buf) - self.pos > self.limit:
                raise BadInputError(self.display, f"{what} at character {self.position} is longer than the "
                                                  f"{self.limit}-character limit for one record")
            self._more()
