"""Read JSON records from a data file, one at a time, with errors that name file and line."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import warnings

import orjson

from ..errors import BadInputError
from .sources import SourceFile

Progress = Callable[[int], None]  # called with stored bytes consumed since the last call
PROGRESS_STEP_BYTES = 1 << 20


def no_progress(_: int) -> None:
    pass


def parse_record(line: bytes, file: SourceFile, line_no: int) -> dict[str, Any]:
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as u:
            raise BadInputError(file.display, f"not valid UTF-8 (byte {u.start} of the line)", line=line_no) from None
        raise BadInputError(file.display, f"invalid JSON: {e}", line=line_no) from None
    if not isinstance(record, dict):
        raise BadInputError(file.display, f"expected a JSON object, got {type(record).__name__}", line=line_no)
    return record


def json_lines(file: SourceFile, max_line_bytes: int, progress: Progress = no_progress,
               torn_tail_ok: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) for every non-blank line; 1-based line numbers.

    With `torn_tail_ok`, an unparseable last line with no newline (a write cut short by
    a crash) is skipped with a warning instead of failing the file.
    """
    scale = file.stored_bytes / file.plain_bytes if file.plain_bytes else 1.0
    reported = read = 0  # stored bytes reported; plain bytes read and not yet reported
    with file.open() as stream:
        line_no = 0
        while line := stream.readline(max_line_bytes + 1):
            line_no += 1
            if len(line) > max_line_bytes:
                raise BadInputError(file.display, f"record longer than the {max_line_bytes}-byte limit", line=line_no)
            read += len(line)
            if read >= PROGRESS_STEP_BYTES:  # a bar update costs more than parsing a short line
                step = min(int(read * scale), file.stored_bytes - reported)
                reported, read = reported + step, 0
                progress(step)
            if not line.strip():
                line_no += _skip_blank_lines(stream)
                continue
            if torn_tail_ok and not line.endswith(b"\n"):
                try:
                    record = parse_record(line, file, line_no)
                except BadInputError:
                    torn_tail_skipped(file, line_no)
                    continue
                yield line_no, record
            else:
                yield line_no, parse_record(line, file, line_no)
    progress(file.stored_bytes - reported)


BLANK = b" \t\r\n"


def _skip_blank_lines(stream: Any) -> int:
    """Consume the blank lines that follow, a buffer at a time; how many. A line at a time, a
    compressed stream of newlines within its ratio cap (100 MB from a 500 KB .jsonl.gz) cost
    minutes of CPU. Whitespace after the last newline of a run stays: it starts the next line."""
    peek = getattr(stream, "peek", None)
    skipped = 0
    while peek is not None:
        ahead = peek(1 << 16)
        run = ahead[: len(ahead) - len(ahead.lstrip(BLANK))]
        end = run.rfind(b"\n") + 1
        if end == 0:
            break
        stream.read(end)
        skipped += run.count(b"\n", 0, end)
    return skipped


def torn_tail_skipped(file: SourceFile, line_no: int) -> None:
    warnings.warn(f"{file.display}, line {line_no}: interrupted write, skipped", RuntimeWarning, stacklevel=3)


def read_json_file(file: SourceFile, limit: int) -> Any:
    """A whole (small) JSON file: a manifest, a task list, a config. Larger than `limit` is an error."""
    with file.open() as stream:
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise BadInputError(file.display, f"larger than {limit} bytes")
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise BadInputError(file.display, f"invalid JSON: {e}") from None


def first_record(file: SourceFile, max_line_bytes: int) -> dict[str, Any] | None:
    """The first record of a JSON-lines file, or None when the file does not start like one."""
    with file.open() as stream:
        line = stream.readline(min(max_line_bytes, 1 << 20) + 1)
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return record if isinstance(record, dict) else None
