"""The one error contract: every error a user can act on is a TracewhError subclass whose
message is what the user sees. The CLI maps them to exit codes in one place (cli/errors.py),
the HTTP service to statuses in one place (service/errors.py); nothing else catches them.
"""

from __future__ import annotations

from functools import partial


class TracewhError(Exception):
    """Something the user can fix; the message says what and where."""

    exit_code = 1  # for the CLI
    http_status = 500  # for the service


class UsageError(TracewhError):
    """A request tracewh cannot carry out as asked: a bad option value, an unknown name, a
    path the store cannot live at. The message says what to do instead."""

    exit_code = 2
    http_status = 400


class BadInputError(TracewhError):
    """Input that cannot be ingested. Names the file, the line/record and the field."""

    exit_code = 2
    http_status = 422

    def __init__(self, file: str, problem: str, *, line: int | None = None, field: str | None = None):
        self.file, self.problem, self.line, self.field = file, problem, line, field
        where = file
        if line is not None:
            where += f", line {line}"
        if field is not None:
            where += f", field '{field}'"
        super().__init__(f"{where}: {problem}")

    def __reduce__(self):  # so a staging worker's refusal reaches the main process whole (ingest/workers.py)
        return partial(type(self), line=self.line, field=self.field), (self.file, self.problem)


class QueryError(TracewhError):
    """A query that tracewh will not run, or that the engine cannot read; says what and why."""

    exit_code = 2
    http_status = 400


class QueryTimeout(QueryError):
    """A query stopped at its time limit."""

    http_status = 408


class QualityError(TracewhError):
    """A batch failed the data-quality gate; nothing was committed. The message is the report."""

    exit_code = 2
    http_status = 422


class StoreError(TracewhError):
    """The warehouse is missing, unreadable or asked for something it does not hold."""

    exit_code = 1
    http_status = 500


class CatalogGone(StoreError):
    """The view catalog of the version a read chose was removed before the read opened it (builders
    keep the newest few, queries/catalog.py): the service reads the newest version instead."""


class NotFoundError(StoreError):
    """A run, task, view or version the store does not hold."""

    exit_code = 2
    http_status = 404
