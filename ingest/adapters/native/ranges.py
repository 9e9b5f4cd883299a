"""A large native file cut at line boundaries into ranges, one group each, that workers read
side by side (ingest/workers.py): one file would otherwise be staged by one process.

Each range knows the number of its first line, so its events are numbered as a reading of the
whole file numbers them (`seq`, `source`, ids, errors). Finding the cuts costs one pass over the
file counting newlines (0.4-0.5 s a GB, while a thread hashes the file for its digest,
sources.py). Only plain local files are cut: a compressed stream cannot start mid-file.
"""

from __future__ import annotations

from ...sources import SourceFile, file_range
from ..base import Group

# A range ends at the first line end past this many bytes: just under four of the reader's
# 8 MB blocks (columns.BLOCK_BYTES), as a range a few bytes over four would end in a block of
# those few bytes, which costs a whole block's fixed work.
RANGE_BYTES = 31 << 20
SCAN_BYTES = 8 << 20


def split(group: Group) -> list[Group]:
    """The group of one native file, as one group per range (a file_range, which knows the number
    of its first line), or as it is when the file is too small to share or cannot be read mid-file."""
    (file,) = group.files
    if not file.seekable or file.stored_bytes < 2 * RANGE_BYTES:
        return [group]
    starts = [(0, 1), *_cuts(file)]
    ends = [offset for offset, _ in starts[1:]] + [file.stored_bytes]
    return [Group(group.format, [file_range(file, offset, end, line)])
            for (offset, line), end in zip(starts, ends) if end > offset]  # a last line may end at the file's end


def _cuts(file: SourceFile) -> list[tuple[int, int]]:
    """(byte offset, line number) of each range's first line after the first range: the line
    after the first line end at least RANGE_BYTES past the previous cut. The last range holds
    at least about RANGE_BYTES."""
    cuts: list[tuple[int, int]] = []
    last_start = file.stored_bytes - RANGE_BYTES
    offset, newlines, target = 0, 0, RANGE_BYTES  # newlines: counted in the bytes before `offset + counted`
    with file.open() as stream:
        while target <= last_start and (chunk := stream.read(SCAN_BYTES)):
            counted = 0
            while target <= last_start and (at := chunk.find(b"\n", max(target - offset, 0))) >= 0:
                newlines += chunk.count(b"\n", counted, at + 1)
                counted = at + 1
                cuts.append((offset + counted, newlines + 1))
                target = offset + counted + RANGE_BYTES
            newlines += chunk.count(b"\n", counted)
            offset += len(chunk)
    return cuts
