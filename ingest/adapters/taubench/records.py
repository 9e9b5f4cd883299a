"""Which files are τ-bench results, what their names say, and their episodes, streamed.

A result file is one JSON array (docs/formats/taubench.md §1-§2), read item by item with
ijson, never whole. Recognised by a first array item holding `task_id` and `reward`; shard
and model come from `--attr` or the file name (§6).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ....errors import BadInputError
from ...context import AdapterContext
from ...fields import Fields
from ...sources import SourceFile

FORMAT = "tau-bench"
SHARDS = ("airline", "retail")
SNIFF_EVENTS = 2000  # parse events looked at before giving up on finding the keys


def sniff(file: SourceFile, ctx: AdapterContext) -> str | None:
    # A JSON array's first line is not a JSON object: JSON Lines files are someone else's.
    if ctx.first(file) is not None or not file.name.lower().endswith((".json", ".json.gz")):
        return None
    import ijson  # here: discovery asks about every file, most of them no JSON array (2 ms of imports)

    keys: set[str] = set()
    try:
        with file.open() as stream:
            for n, (prefix, event, value) in enumerate(ijson.parse(stream)):
                if prefix == "item" and event == "map_key":
                    keys.add(value)
                if {"task_id", "reward"} <= keys or (prefix == "item" and event == "end_map") or n > SNIFF_EVENTS:
                    break
    except (ijson.JSONError, BadInputError):
        return None
    return FORMAT if {"task_id", "reward"} <= keys else None


def stem(file: SourceFile) -> str:
    return file.name.rsplit("/", 1)[-1].removesuffix(".gz").removesuffix(".json")


def shard_of(file: SourceFile, ctx: AdapterContext) -> str:
    if ctx.attrs.get("shard"):
        return ctx.attrs["shard"]
    found = [s for s in SHARDS if s in stem(file).lower()]
    if len(found) != 1:
        raise BadInputError(file.display, "cannot tell the τ-bench shard from the file name; pass --attr shard=airline|retail")
    return found[0]


def model_of(file: SourceFile, ctx: AdapterContext, shard: str) -> str:
    return ctx.attrs.get("model") or re.sub(rf"[-_]?{shard}$", "", stem(file), flags=re.I) or "unknown"


def episodes(file: SourceFile, ctx: AdapterContext) -> Iterator[tuple[int, Fields]]:
    """(array item number, its fields) for every episode, 1-based."""
    import ijson

    n = 0
    try:
        with file.open() as stream:
            for n, record in enumerate(ijson.items(stream, "item", use_float=True), start=1):
                if not isinstance(record, dict):
                    raise BadInputError(file.display, f"array item {n}: expected an object")
                yield n, Fields(record, f"{file.display} (array item {n})", None)
    except ijson.JSONError as e:  # the parser's message runs over several lines: its first is the point
        problem = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise BadInputError(file.display, f"array item {n + 1}: invalid JSON: {problem}") from None
    ctx.progress(file.stored_bytes)
