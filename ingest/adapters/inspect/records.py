"""Which files are Inspect eval logs, their headers, and their samples, streamed.

Recognised by content (docs/formats/inspect.md §1): a zip whose first entry is one of
Inspect's members (or any zip named `.eval`), or a JSON object whose top-level keys are
EvalLog fields including `version` and `eval`. Logs of one eval (same `eval_id`: an
in-progress copy and the finished log, or the same log in both formats) found in one source
are read together as one run, the most complete first.

The header is `header.json` of an `.eval`, or the top-level members of a `.json` other than
`samples` (§3, §4). An `.eval` without `header.json` is an eval still running (or one that
crashed): its header is `_journal/start.json` and its status `started`; one that has the
end-of-run members (`summaries.json`, `reductions.json`) but no header is damaged and refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ....errors import BadInputError
from ....schema import event_id
from ...context import AdapterContext
from ...fields import Fields
from ...sources import SourceFile, is_data_file
from ..base import Group
from .jsonlog import TopLevelObject

if TYPE_CHECKING:  # evalzip.py is imported where an .eval is opened: its zstd zip support costs 4 ms
    from .evalzip import EvalArchive

EVAL, JSON = "inspect-eval", "inspect-json"  # the formats `tracewh log` shows
LOG_VERSIONS = (1, 2)  # Inspect writes 2 (docs §4) and migrates older shapes on read; so does sample.py
STATUSES = ("started", "success", "cancelled", "error")
ZIP_MAGIC = b"PK\x03\x04"
MEMBER_PREFIXES = ("_journal/", "samples/", "header.json", "summaries.json", "reductions.json")
HEADER, START, SAMPLES = "header.json", "_journal/start.json", "samples/"
END_OF_RUN = ("summaries.json", "reductions.json")  # written just before header.json
# EvalLog's fields: a JSON object starting with anything else is not a log
LOG_FIELDS = frozenset({"version", "status", "eval", "plan", "results", "stats", "error", "invalidated",
                        "log_updates", "config_updates", "tags", "metadata", "samples", "reductions", "location",
                        "etag", "eval_set_info"})
REQUIRED = ("version", "eval")
COMPLETENESS = {"success": 0, "error": 0, "cancelled": 0, "started": 1}


@dataclass
class Log:
    """One log file, its header read; samples() streams the rest."""

    file: SourceFile
    format: str
    header: dict[str, Any]
    status: str
    where: str  # the header's place, for errors: the file, or its header member
    run_key: str = field(init=False)

    def __post_init__(self) -> None:
        self.run_key = run_key(self)

    @property
    def fields(self) -> Fields:
        return Fields(self.header, self.where, None)


def sniff(file: SourceFile, ctx: AdapterContext) -> str | None:
    with file.open() as stream:
        head = stream.read(512)
    if head.startswith(ZIP_MAGIC):
        return EVAL if file.name.lower().endswith(".eval") or _first_member(head).startswith(MEMBER_PREFIXES) else None
    if head.lstrip()[:1] != b"{":
        return None
    return JSON if _json_log_start(file, ctx) else None


def _json_log_start(file: SourceFile, ctx: AdapterContext) -> bool:
    """A JSON log starts `{"version": <int>, "status": ...` (EvalLog's field order), or at least
    holds version and eval ahead of anything that is not an EvalLog field. Read no further than
    that, so a log cut short is still recognised (and then refused as truncated)."""
    obj = TopLevelObject(file.open(), file.display, ctx.limits.max_line_bytes)
    seen: dict[str, Any] = {}
    try:
        for key in obj.keys():
            if key not in LOG_FIELDS:
                return False
            if list(seen) == ["version"] and key == "status" and isinstance(seen["version"], int):
                return True
            if key == "samples":
                break
            seen[key] = obj.value()
    except BadInputError:
        return False
    finally:
        obj.close()
    return all(k in seen for k in REQUIRED)


def _first_member(head: bytes) -> str:
    """The name in the zip's first local header (readable even when the file is cut short)."""
    if len(head) < 30:
        return ""
    name_len = int.from_bytes(head[26:28], "little")
    return head[30:30 + name_len].decode("utf-8", errors="replace")


def groups(files: list[SourceFile], ctx: AdapterContext) -> list[Group]:
    by_run: dict[str, list[Log]] = {}
    for f in files:
        fmt = sniff(f, ctx) if is_data_file(f.name) else None
        if fmt is not None:
            log = read_header(f, fmt, ctx)
            by_run.setdefault(log.run_key, []).append(log)
    found = []
    for logs in by_run.values():
        logs.sort(key=lambda log: (COMPLETENESS[log.status], log.file.name))
        found.append(Group("+".join(sorted({log.format for log in logs})), [log.file for log in logs], logs))
    return found


def read_header(file: SourceFile, fmt: str, ctx: AdapterContext) -> Log:
    if fmt == EVAL:
        from .evalzip import EvalArchive

        with EvalArchive(file, ctx.limits) as archive:
            member = _eval_header_member(archive)
            header, where = archive.read_json(member), archive.where(member)
        status = "started" if member == START else header.get("status") if isinstance(header, dict) else None
    else:
        header, where = _json_header(file, ctx), file.display
        status = header.get("status")
    _check_header(where, header, status)
    return Log(file, fmt, header, status, where)


def _eval_header_member(archive: EvalArchive) -> str:
    if HEADER in archive.members:
        return HEADER
    finished = [m for m in END_OF_RUN if m in archive.members]
    if finished:
        raise BadInputError(archive.where(HEADER), f"missing: the log was finished ({finished[0]} is present) "
                            "but has no header (truncated or damaged)")
    if START not in archive.members:
        raise BadInputError(archive.where(HEADER), f"missing, and so is {START}: not an Inspect log, or damaged")
    return START  # an eval still running (or crashed): Inspect reads it the same way


def _json_header(file: SourceFile, ctx: AdapterContext) -> dict[str, Any]:
    """Top-level members other than `samples`, streamed. Inspect writes them first, so the read
    stops at `samples` once the required ones are in; other orders are read past it."""
    header: dict[str, Any] = {}
    obj = TopLevelObject(file.open(), file.display, ctx.limits.max_line_bytes)
    try:
        for key in obj.keys():
            if key == "samples":
                if all(k in header for k in REQUIRED):
                    break
                for _ in obj.items():  # skipped, a sample at a time
                    pass
            else:
                header[key] = obj.value()
    finally:
        obj.close()
    return header


def _check_header(where: str, header: Any, status: Any) -> None:
    if not isinstance(header, dict):
        raise BadInputError(where, "the log header is not a JSON object")
    f = Fields(header, where, None)
    version = f.req("version", "integer")
    if version not in LOG_VERSIONS:
        raise f.error("version", f"Inspect log version {version} is not supported (this tracewh reads versions "
                                 f"{', '.join(map(str, LOG_VERSIONS))}); upgrade tracewh")
    spec = f.sub("eval")
    spec.req("task", "string")
    spec.req("model", "string")
    if status not in STATUSES:
        raise f.error("status", f"expected one of {', '.join(STATUSES)}, got {status!r}")


def run_key(log: Log) -> str:
    """The log's `eval_id` (one task x one model); logs older than eval_id get a key from the
    fields that identified an eval before it (Inspect's run_id, task_id, creation time)."""
    spec = log.fields.sub("eval")
    eval_id = spec.opt("eval_id", "string")
    if eval_id:
        return eval_id
    parts = [spec.opt(k, "string") for k in ("run_id", "task_id", "created", "task", "model")]
    return "spec-" + event_id("inspect", *parts)[:22]


def samples(log: Log, ctx: AdapterContext) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(sample number in the file, where it is for errors, the sample) for every sample."""
    reader = _eval_samples if log.format == EVAL else _json_samples
    for n, where, sample in reader(log, ctx):
        if not isinstance(sample, dict):
            raise BadInputError(where, f"a sample must be a JSON object, got {type(sample).__name__}")
        yield n, where, sample


def _eval_samples(log: Log, ctx: AdapterContext) -> Iterator[tuple[int, str, Any]]:
    from .evalzip import EvalArchive

    with EvalArchive(log.file, ctx.limits) as archive:
        names = [name for name in archive.members if name.startswith(SAMPLES) and name.endswith(".json")]
        total = sum(archive.members[name].compress_size for name in names) or 1
        reported = 0
        for n, name in enumerate(names, start=1):
            sample = archive.read_json(name)
            step = log.file.stored_bytes * archive.members[name].compress_size // total
            ctx.progress(step)
            reported += step
            yield n, archive.where(name), sample
    ctx.progress(max(log.file.stored_bytes - reported, 0))


def _json_samples(log: Log, ctx: AdapterContext) -> Iterator[tuple[int, str, Any]]:
    obj = TopLevelObject(log.file.open(), log.file.display, ctx.limits.max_line_bytes)
    plain = log.file.plain_bytes or log.file.stored_bytes
    reported = 0
    try:
        for key in obj.keys():
            if key != "samples":
                continue
            for n, sample in enumerate(obj.items(), start=1):
                done = min(log.file.stored_bytes * obj.position // max(plain, 1), log.file.stored_bytes)
                ctx.progress(done - reported)
                reported = done
                yield n, f"{log.file.display} (samples[{n - 1}])", sample
        # the keys after `samples` (reductions, derived from the samples) are decoded and dropped:
        # reading to the end refuses a log cut short after its samples too
    finally:
        obj.close()
    ctx.progress(log.file.stored_bytes - reported)
