"""Errors a user can act on. Each carries the exit code the CLI returns for it."""

from __future__ import annotations


class TracewhError(Exception):
    """Something the user can fix; the message says what and where."""

    exit_code = 1


class BadInputError(TracewhError):
    """Input that cannot be ingested. Names the file, the line/record and the field."""

    exit_code = 2

    def __init__(self, file: str, problem: str, *, line: int | None = None, field: str | None = None):
        self.file, self.problem, self.line, self.field = file, problem, line, field
        where = file
        if line is not None:
            where += f", line {line}"
        if field is not None:
            where += f", field '{field}'"
        super().__init__(f"{where}: {problem}")


class StoreError(TracewhError):
    """The warehouse is missing, unreadable or asked for something it does not hold."""

    exit_code = 1


class QualityError(TracewhError):
    """A batch failed the data-quality gate; nothing was committed. The message is the report."""

    exit_code = 2
