"""Find the runs in an EntCollabBench archive, and the raw rows and side files of each.

A run is one driver result file `result[-X].jsonl` (docs/formats/entcollabbench.md §11)
with, beside it, optionally its trajectory `traj/traj[-X].jsonl` (or `traj[-X].jsonl`,
§12), the task file(s) (§10) and the permission config (§16). A trajectory with no result
file to pair with is refused. Result and trajectory rows rewritten on resume are
deduplicated by task id, the latest `timestamp` winning (ties: the later line); the
reading itself is events.py's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from posixpath import basename, dirname, join
from typing import Any

from ....errors import BadInputError
from ...context import AdapterContext
from ...fields import Fields
from ...jsonlines import json_lines, no_progress, read_json_file
from ...sources import SourceFile
from ...values import BadValue, parse_time
from ..base import Group
from .tasks import task_list, task_specs

FORMAT = "entcollabbench-run"
RESULT_NAME = re.compile(r"^result([-_].*)?\.jsonl(\.gz)?$")
CONFIG_NAMES = ("agent_specs.json", "agent_toolsets.json", "mcp_auth_by_agent.json")
RESULT_KEYS = {"task_id", "task_passed", "judge", "judge_error"}
ENDPOINT_CONFIG = re.compile(r"^(agent_peers|agent_url_map|mcp_endpoints.*)\.json$")  # claimed, not read
MAX_JSON_BYTES = 64 << 20
KEPT_BYTES = 4 << 20  # TwoReadings: the scale-1 bench's trajectories are 0.8-2.8 MB


@dataclass
class RunFiles:
    result: SourceFile
    trajectory: SourceFile | None
    task_files: list[SourceFile] = field(default_factory=list)
    specs: dict[str, dict[str, Any]] = field(default_factory=dict)  # task id -> spec, from task_files
    configs: dict[str, SourceFile] = field(default_factory=dict)
    ignored: list[SourceFile] = field(default_factory=list)  # endpoint maps and the like: claimed, not read

    @property
    def files(self) -> list[SourceFile]:
        return [self.result, *([self.trajectory] if self.trajectory else []), *self.task_files,
                *self.configs.values(), *self.ignored]


def stem(name: str) -> str:
    """A JSON Lines file's name without folder and suffix: `traj/traj-a.jsonl.gz` -> `traj-a`."""
    return re.sub(r"\.jsonl(\.gz)?$", "", basename(name))


def _is_json(f: SourceFile) -> bool:
    return f.name.lower().endswith((".json", ".json.gz"))


def sniff(file: SourceFile, ctx: AdapterContext) -> str | None:
    """A run's result file: named result[-X].jsonl, its first record a result row."""
    if RESULT_NAME.match(basename(file.name)) and RESULT_KEYS & set(ctx.first(file) or {}):
        return FORMAT
    return None


def groups(files: list[SourceFile], ctx: AdapterContext) -> list[Group]:
    results = [f for f in files if sniff(f, ctx)]
    if not results:
        _refuse_unpaired_trajectories(files, [], ctx)
        return []
    by_name = {f.name: f for f in files}
    configs = {basename(f.name): f for f in files if basename(f.name) in CONFIG_NAMES}
    others = [f for f in files if ENDPOINT_CONFIG.match(basename(f.name))]
    task_files = _task_files(files, others)
    runs = []
    for result in results:
        mine = _task_files_for(result, [f for f, _ in task_files.values()])
        specs = {k: v for f in mine for k, v in task_files[f.name][1].items()}
        runs.append(RunFiles(result, _trajectory_of(result, by_name), mine, specs, configs, others))
    _refuse_unpaired_trajectories(files, runs, ctx)
    return [Group(FORMAT, run.files, run) for run in runs]


def _task_files(files: list[SourceFile], others: list[SourceFile]) -> dict[str, tuple[SourceFile, dict[str, Any]]]:
    """name -> (task file, its specs): each task file is read and normalised once, whatever the runs."""
    found = {}
    for f in files:
        if _is_json(f) and f not in others and basename(f.name) not in CONFIG_NAMES:
            data = read_json_file(f, MAX_JSON_BYTES)
            if task_list(data) is not None:
                found[f.name] = (f, task_specs(data, f.display))
    return found


def _trajectory_of(result: SourceFile, by_name: dict[str, SourceFile]) -> SourceFile | None:
    suffix = stem(result.name)[len("result"):]
    folder = dirname(result.name)
    candidates = (join(folder, "traj", f"traj{suffix}.jsonl"), join(folder, f"traj{suffix}.jsonl"),
                  join(folder, "traj", f"traj{suffix}.jsonl.gz"))
    return next((by_name[n] for n in candidates if n in by_name), None)


def _task_files_for(result: SourceFile, task_files: list[SourceFile]) -> list[SourceFile]:
    """The task file named in the result file's name, else the only one in the archive."""
    result_stem = stem(result.name)
    named = [f for f in task_files if re.sub(r"\.json(\.gz)?$", "", basename(f.name)) in result_stem]
    if named or len(task_files) <= 1:
        return named or task_files
    raise BadInputError(result.display, "several task files and none named in this result file's name "
                                        f"({', '.join(f.name for f in task_files)}); name the result file "
                                        "result-<task file stem>.jsonl or ingest one task set per archive")


def _refuse_unpaired_trajectories(files: list[SourceFile], runs: list[RunFiles], ctx: AdapterContext) -> None:
    paired = {r.trajectory.name for r in runs if r.trajectory}
    for f in files:
        if basename(f.name).startswith("traj") and f.name not in paired and "batch_entry" in (ctx.first(f) or {}):
            raise BadInputError(f.display, "trajectory file without its result file (expected "
                                           "result<suffix>.jsonl beside traj/traj<suffix>.jsonl)")


def config(run: RunFiles, name: str, kind: type, problem: Callable[[Any], tuple[str, str] | None]) -> Any:
    """A permission config file's JSON (`kind` list or dict), None when the archive has none;
    `problem` names the first entry of it that cannot be read ((field, what), or None)."""
    f = run.configs.get(name)
    if f is None:
        return None
    data = read_json_file(f, MAX_JSON_BYTES)
    if not isinstance(data, kind):
        raise BadInputError(f.display, f"expected a JSON {'array' if kind is list else 'object'}, got {type(data).__name__}")
    if found := problem(data):
        raise BadInputError(f.display, found[1], field=found[0])
    return data


def rows(file: SourceFile, ctx: AdapterContext, *, counted: bool = True) -> Iterator[Fields]:
    """Every row of a result or trajectory file; `counted=False` for a first pass that the
    progress bar should not see twice."""
    progress = ctx.progress if counted else no_progress
    for line, record in json_lines(file, ctx.limits.max_line_bytes, progress):
        yield Fields(record, file.display, line)


class TwoReadings:
    """A result or trajectory file the run reader reads twice: first for which rows win, then for
    their events. A file of up to KEPT_BYTES is parsed once, its rows kept between the readings
    (parsing the trajectories again was a tenth of staging a run); a larger one is read again,
    so that a worker holds no more than a few files' rows at a time."""

    def __init__(self, file: SourceFile, ctx: AdapterContext):
        self.file, self.ctx = file, ctx
        self.kept: list[Fields] | None = [] if (file.plain_bytes or file.stored_bytes) <= KEPT_BYTES else None

    def first(self) -> Iterator[Fields]:
        for row in rows(self.file, self.ctx, counted=False):
            if self.kept is not None:
                self.kept.append(row)
            yield row

    def again(self) -> Iterator[Fields]:
        if self.kept is None:
            yield from rows(self.file, self.ctx)
            return
        kept, self.kept = self.kept, None
        yield from kept
        self.ctx.progress(self.file.stored_bytes)


def row_timestamp(f: Fields) -> tuple[str, datetime]:
    """The row's ISO-8601 `timestamp` (the driver writes UTC with milliseconds), as written and as a time."""
    value = f.req("timestamp", "string")
    try:
        return value, parse_time(value)
    except BadValue as e:
        raise f.error("timestamp", str(e)) from None


@dataclass
class Latest:
    """Per task id: the line holding its latest row (ties: the later line)."""

    lines: dict[str, tuple[datetime, int, str]] = field(default_factory=dict)  # task -> (when, line, timestamp)

    def offer(self, task_id: str, timestamp: tuple[str, datetime], line: int) -> None:
        text, when = timestamp
        old = self.lines.get(task_id)
        if old is None or when >= old[0]:
            self.lines[task_id] = (when, line, text)

    def winners(self) -> set[int]:
        return {line for _, line, _ in self.lines.values()}

    def timestamp(self, task_id: str) -> str | None:
        """The latest row's `timestamp` as written, or None when the task has no row."""
        found = self.lines.get(task_id)
        return found[2] if found else None
