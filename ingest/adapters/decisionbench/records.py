"""Which files make up each DecisionBench run, and the raw records that come off them.

A run is found through its `manifest.json` (`format: decisionbench-run/1`); records.jsonl,
traces/ and profiles/ are looked up relative to the manifest's folder, so one archive may
hold several runs (docs/formats/decisionbench.md §2). A manifest of another
`decisionbench-run/*` version is refused; one with no such format is not claimed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from posixpath import dirname

from ....errors import BadInputError
from ...context import AdapterContext
from ...fields import Fields
from ...jsonlines import json_lines, read_json_file
from ...sources import SourceFile
from ..base import Group

FORMAT = "decisionbench-run"  # the name `tracewh log` shows
VERSION = "decisionbench-run/1"  # the manifest's `format`: the one layout this tracewh reads
MAX_MANIFEST_BYTES = 16 << 20
BENCHMARK = "decisionbench"
DELEGATE_TOOL = "call_model"  # the tool an orchestrator delegates with (§5)


@dataclass
class RunFiles:
    root: str  # "" or "folder/" inside the source
    manifest: SourceFile
    records: SourceFile | None = None
    traces: list[SourceFile] = field(default_factory=list)
    profiles: list[SourceFile] = field(default_factory=list)

    @property
    def files(self) -> list[SourceFile]:
        return [self.manifest, *([self.records] if self.records else []), *self.traces, *self.profiles]


def sniff(file: SourceFile, ctx: AdapterContext) -> str | None:
    """A run's manifest; the whole file is read, manifests being pretty-printed JSON, not lines."""
    if file.name.rsplit("/", 1)[-1] != "manifest.json":
        return None
    data = read_json_file(file, MAX_MANIFEST_BYTES)
    version = data.get("format") if isinstance(data, dict) else None
    if isinstance(version, str) and version.startswith("decisionbench-run/") and version != VERSION:
        raise BadInputError(file.display, f"format {version!r} is not supported (this tracewh reads {VERSION})",
                            field="format")
    return FORMAT if version == VERSION else None


def groups(files: list[SourceFile], ctx: AdapterContext) -> list[Group]:
    runs = [RunFiles(dirname(f.name) + "/" if "/" in f.name else "", f) for f in files if sniff(f, ctx)]
    for run in runs:
        _pair(run, files)
    return [Group(FORMAT, run.files, run) for run in runs]


def _pair(run: RunFiles, files: list[SourceFile]) -> None:
    """Attach the run's records, traces (in path order) and profile cards, found beside its manifest."""
    for f in files:
        rel = f.name[len(run.root):] if f.name.startswith(run.root) else None
        if rel == "records.jsonl":
            run.records = f
        elif rel and rel.startswith("traces/") and rel.endswith(".jsonl"):
            run.traces.append(f)
        elif rel and rel.startswith("profiles/") and rel.endswith(".md"):
            run.profiles.append(f)
    run.traces.sort(key=lambda f: f.name)


def manifest(run: RunFiles) -> Fields:
    return Fields(read_json_file(run.manifest, MAX_MANIFEST_BYTES), run.manifest.display, None)


def rows(file: SourceFile, ctx: AdapterContext) -> Iterator[Fields]:
    """Every line of records.jsonl or of a trace, as typed fields naming file and line."""
    for line, record in json_lines(file, ctx.limits.max_line_bytes, ctx.progress):
        yield Fields(record, file.display, line)


def trace_task(run: RunFiles, trace: SourceFile) -> str:
    """A trace's task id: its path under traces/ without `.jsonl` (ids may hold '/')."""
    return trace.name[len(run.root) + len("traces/"):-len(".jsonl")]


def profile_card(card: SourceFile, ctx: AdapterContext) -> tuple[str, str]:
    """(model, text) of a profile card `profiles/<model>.md`."""
    with card.open() as stream:
        text = stream.read(ctx.limits.max_line_bytes).decode("utf-8", errors="replace")
    return card.name.rsplit("/", 1)[-1].removesuffix(".md"), text
