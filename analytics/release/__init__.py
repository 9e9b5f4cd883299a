"""`tracewh release DIR`: runs of the store as a dataset folder to publish with a paper.

    DIR/events/part-NNNNN.parquet    the events (every column of the event schema), run and seq order
    DIR/views/<view>/part-NNNNN.parquet    chosen views, computed from those events
    DIR/README.md                    the dataset card (Hugging Face front matter, schema, counts, provenance)
    DIR/croissant.json               Croissant 1.0 metadata

One module a step: which events (events.py), the Parquet shards (shards.py), the views and
counts asked of the written shards (released.py), the secret scan over them (secrets.py), the
card (card.py), the Croissant metadata (croissant.py), the atomic folder (folder.py). Nothing
is written to DIR unless every step passes. `tracewh ingest DIR` reads a release back
(ingest/adapters/release/).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from ...errors import NotFoundError, UsageError
from ...schema import ARROW_SCHEMA
from ...schema.content import CONTENT_KEYS
from ...schema.release import CARD, FORMAT, METADATA
from ...version import __version__
from .. import Queryable
from .card import UNSPECIFIED, front_matter, licence_text, render_card
from .croissant import croissant
from .events import IdDigest, chosen_runs, event_batches, strip_content
from .folder import building, check_target
from .released import Counts, Released
from .secrets import DETECTORS, SecretsFound, scan
from .shards import SHARD_ROWS, Shard, content_digest, write_shards

__all__ = ["FORMAT", "Release", "ReleaseRequest", "SecretsFound", "release"]


@dataclass(frozen=True)
class ReleaseRequest:
    runs: Sequence[str] = ()  # these runs (default: every run)
    where: str | None = None  # ... that match this filter over the `runs` view
    views: Sequence[str] = ()  # views to write beside the events
    no_content: bool = False
    allow: Sequence[str] = ()  # values, detector names or regular expressions the secret scan lets through
    license: str = UNSPECIFIED
    title: str | None = None
    description: str | None = None
    citation: str | None = None  # how to cite the dataset (BibTeX, or a sentence)
    shard_rows: int = SHARD_ROWS


@dataclass
class Release:
    path: Path
    events: int
    runs: int
    shards: list[Shard]
    views: dict[str, int] = field(default_factory=dict)  # view -> rows
    events_digest: str = ""
    content_digest: str = ""
    no_content: bool = False
    allowed: int = 0  # distinct secret-shaped values released on purpose (--allow)

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "events": self.events, "runs": self.runs, "shards": len(self.shards),
                "views": self.views, "events_digest": self.events_digest, "content_digest": self.content_digest,
                "no_content": self.no_content, "allowed": self.allowed}


def release(wh: Queryable, store: Path, out: Path, request: ReleaseRequest, *, overwrite: bool = False) -> Release:
    """Write the release of `request` from `wh` (the store at `store`) to `out`, atomically."""
    from ...queries.registry import view_headers

    described = {v.name: v.description for v in view_headers()}
    if unknown := [v for v in request.views if v not in described]:
        raise NotFoundError(f"no view named {unknown[0]!r}; `tracewh views` lists them")
    if request.shard_rows < 1:
        raise UsageError("--shard-rows must be at least 1")
    target = check_target(out, store, overwrite)
    run_ids = chosen_runs(wh, request.runs, request.where)
    footer = {"tracewh_version": __version__, "store_version": wh.version, "no_content": request.no_content}
    ids = IdDigest()
    with building(target) as folder:
        shards = write_shards(event_batches(wh, run_ids), ARROW_SCHEMA, folder, "events/", footer, request.shard_rows,
                              _then(strip_content, ids) if request.no_content else ids)
        with Released(folder, shards) as released:
            views = released.write_views(list(dict.fromkeys(request.views)), footer, request.shard_rows)
            counts = released.counts()
        files = {"events": [folder / s.path for s in shards]} | {
            f"views/{v}": [folder / s.path for s in written] for v, written in views.items()}
        allowed = scan(files, request.allow)  # refuses before anything reaches `target`
        result = Release(target, ids.events, counts.runs, shards, {v: sum(s.rows for s in w) for v, w in views.items()},
                         ids.hexdigest(), content_digest(shards), request.no_content, allowed)
        _describe(folder, wh.version, request, run_ids, counts, result,
                  {v: (written, described[v]) for v, written in views.items()})
    return result


def _describe(folder: Path, store_version: int | None, request: ReleaseRequest, run_ids: list[str] | None,
              counts: Counts, result: Release, views: dict[str, tuple[list[Shard], str]]) -> None:
    """croissant.json and README.md, for the shards written."""
    benchmarks = ", ".join(b["benchmark"] for b in counts.by_benchmark)
    title = request.title or f"Agent traces: {benchmarks}"
    description = request.description or (
        f"Traces of {counts.runs} agent-benchmark run{'s' * (counts.runs != 1)} ({benchmarks}), one row per event"
        + (", without content." if request.no_content else "."))
    today = datetime.date.today().isoformat()
    (folder / METADATA).write_text(croissant(
        {"name": title, "description": description, "license": request.license, "version": "1.0.0", "date": today,
         "citation": request.citation},
        {"events": (result.shards, ARROW_SCHEMA, "One row per event (tracewh event schema)."),
         **{v: (shards, _schema(folder, shards), doc) for v, (shards, doc) in views.items()}}), encoding="utf-8")
    (folder / CARD).write_text(render_card({
        "front_matter": front_matter(title, request.license, list(views)), "title": title, "description": description,
        "tracewh_version": __version__, "counts": counts, "store_version": store_version, "date": today,
        "selection": _selection(request, run_ids), "events_digest": result.events_digest,
        "content_digest": result.content_digest, "no_content": request.no_content,
        "content_keys": ", ".join(f"`{k}`" for k in sorted(CONTENT_KEYS)),
        "detectors": ", ".join(d.name for d in DETECTORS), "allowed": result.allowed, "shard_rows": request.shard_rows,
        "views": [{"name": v, "description": doc, "rows": result.views[v]} for v, (_, doc) in views.items()],
        "licence_text": licence_text(request.license), "citation": request.citation}), encoding="utf-8")


def _then(*steps: Callable[[pa.RecordBatch], pa.RecordBatch]) -> Callable[[pa.RecordBatch], pa.RecordBatch]:
    def run(batch: pa.RecordBatch) -> pa.RecordBatch:
        for step in steps:
            batch = step(batch)
        return batch
    return run


def _schema(folder: Path, shards: list[Shard]) -> pa.Schema:
    import pyarrow.parquet as pq

    return pq.read_schema(folder / shards[0].path)


def _selection(request: ReleaseRequest, run_ids: list[str] | None) -> str:
    if run_ids is None:
        return "every run of the store"
    listed = ", ".join(f"`{r}`" for r in run_ids[:10]) + (f" and {len(run_ids) - 10} more" if len(run_ids) > 10 else "")
    where = f" (runs where `{' '.join(request.where.split())}`)" if request.where else ""
    return f"{len(run_ids)} run{'s' * (len(run_ids) != 1)}{where}: {listed}"
