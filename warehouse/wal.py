"""A write-ahead request log: records appended to segment files in one folder, each durable
(written and fsynced, with the folder entry of a new segment) before `append` returns; a
segment is deleted once its owner has `release`d every record of it (committed it elsewhere).
Storage only: what a record means is the caller's (the OTLP receiver's spool, service/otlp_spool.py).

    FOLDER/00000000000000000001.wal   segments, numbered in the order they were opened
    FOLDER/lock                       held (flock) by the one process using the folder

A record is a 4-byte length, a 4-byte crc32 of length and payload (zlib), then the payload.
Hand-written because it is eight bytes of framing, and the stdlib has no appendable,
checksummed record format (shelve/dbm are key-value stores with their own crash behaviour).
A crash can tear only the last record written; reading a segment stops at the first record
whose length runs past the end or whose checksum does not match, so a torn record, never
acknowledged, is dropped whole and never half-read.

Group fsync: appenders write under a short lock, then one of them (the leader) fsyncs every
file written so far while the others wait on the sync lock; each returns once the sync that
covered its write is done. Concurrent requests so share one fsync.
"""

from __future__ import annotations

import fcntl
import os
import struct
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError

HEADER = struct.Struct("<II")  # payload length, crc32(length bytes + payload)
SUFFIX = ".wal"
SEGMENT_BYTES = 16 << 20  # a segment is closed for appends past this size: what a restart may replay again
DIR_MODE, FILE_MODE = 0o755, 0o644


@dataclass
class _Segment:
    number: int
    path: Path
    fd: int | None = None  # open while records may be appended or await a sync
    bytes: int = 0
    unreleased: int = 0  # records appended (or found at open) and not yet released
    unreleased_bytes: int = 0
    dirty: bool = False  # written since its last fsync
    new: bool = False  # its folder entry is not yet fsynced


def encode(payload: bytes) -> bytes:
    return HEADER.pack(len(payload), _checksum(len(payload), payload)) + payload


def _checksum(length: int, payload: bytes) -> int:
    return zlib.crc32(payload, zlib.crc32(struct.pack("<I", length)))


def read_records(path: Path) -> Iterator[bytes]:
    """The whole records of a segment, in order, up to the first torn or corrupt one."""
    data = path.read_bytes()
    at = 0
    while at + HEADER.size <= len(data):
        length, crc = HEADER.unpack_from(data, at)
        end = at + HEADER.size + length
        if end > len(data):
            return  # torn: the write of this record did not finish
        payload = data[at + HEADER.size:end]
        if _checksum(length, payload) != crc:
            return  # torn or damaged: nothing after it was acknowledged as written after it
        yield payload
        at = end


class RequestLog:
    """The write-ahead log in `folder`, for one process at a time (UsageError if another holds it).
    `recovered()` gives the records of segments an earlier process did not release whole; `append` adds a
    record durably; `release(segment, size)` says a record of that segment and payload size is
    committed, and a segment whose every record is released is deleted."""

    def __init__(self, folder: Path):
        self.folder = folder
        for level in reversed([p for p in (folder, *folder.parents) if not p.exists()]):
            level.mkdir(mode=DIR_MODE, exist_ok=True)  # at most the store's own modes, whatever the umask
        self._lock_file = os.fdopen(os.open(folder / "lock", os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE), "a")
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released by the OS if the process dies
        except BlockingIOError:
            self._lock_file.close()
            raise UsageError(f"{folder} is in use by another process (another `tracewh serve` of this store?)") from None
        self._lock = threading.Lock()  # segments, counters, writes
        self._sync_lock = threading.Lock()  # one fsync at a time; closing a file waits for it
        self._segments: dict[int, _Segment] = {}
        self._active: _Segment | None = None
        self._written = self._synced = 0  # appends written, appends known durable
        self._recovered: list[tuple[int, bytes]] = []
        for path in sorted(folder.glob(f"*{SUFFIX}")):
            segment = _Segment(int(path.stem), path)
            for payload in read_records(path):
                self._recovered.append((segment.number, payload))
                segment.unreleased += 1
                segment.unreleased_bytes += len(payload)
            self._segments[segment.number] = segment
            if not segment.unreleased:  # nothing whole in it: a torn first record, or empty
                path.unlink()
                del self._segments[segment.number]
        self._next = max(self._segments, default=0) + 1

    def recovered(self) -> list[tuple[int, bytes]]:
        """(segment, payload) of every record in the segments an earlier process left, in order. A
        release is not written down: a segment comes back whole until all of it was released, its
        released records included, so what the caller does with a record must be idempotent."""
        return list(self._recovered)

    @property
    def waiting_bytes(self) -> int:
        """Payload bytes appended (or recovered) and not yet released."""
        with self._lock:
            return sum(s.unreleased_bytes for s in self._segments.values())

    def append(self, payload: bytes) -> int:
        """Write the record and return its segment once it is durable (fsynced)."""
        record = encode(payload)
        with self._lock:
            segment = self._writable(len(record))
            self._write(segment, record)
            segment.bytes += len(record)
            segment.unreleased += 1
            segment.unreleased_bytes += len(payload)
            segment.dirty = True
            self._written += 1
            mine = self._written
        self._sync(mine)
        return segment.number

    def release(self, segment_number: int, size: int) -> None:
        """A record of the segment, of `size` payload bytes, is committed; delete the segment when none is left."""
        with self._sync_lock, self._lock:  # no fsync is running on a file this may close
            segment = self._segments[segment_number]
            segment.unreleased -= 1
            segment.unreleased_bytes -= size
            if segment.unreleased:
                return
            if segment.fd is not None:
                os.close(segment.fd)
            segment.path.unlink()
            del self._segments[segment_number]
            if self._active is segment:
                self._active = None  # the next append opens a new segment

    def close(self) -> None:
        with self._sync_lock, self._lock:
            for segment in self._segments.values():
                if segment.fd is not None:
                    os.close(segment.fd)
                    segment.fd = None
            self._active = None
            self._lock_file.close()

    def _writable(self, size: int) -> _Segment:
        """The segment to append to, a new one when there is none or it is full (called under _lock)."""
        active = self._active
        if active is not None and (not active.bytes or active.bytes + size <= SEGMENT_BYTES):
            return active
        self._active = _Segment(self._next, self.folder / f"{self._next:020d}{SUFFIX}", new=True)
        self._active.fd = os.open(self._active.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND,
                                    FILE_MODE)
        self._segments[self._next] = self._active
        self._next += 1
        return self._active

    @staticmethod
    def _write(segment: _Segment, record: bytes) -> None:
        """Append the whole record or nothing: a failed write (disk full) is cut off again, as a
        torn record in the middle of a segment would hide every record after it."""
        try:
            if os.write(segment.fd, record) != len(record):  # type: ignore[arg-type]
                raise OSError(f"short write to {segment.path}")
        except OSError:
            os.ftruncate(segment.fd, segment.bytes)  # type: ignore[arg-type]
            raise

    def _sync(self, mine: int) -> None:
        """Return once append number `mine` is durable: fsync every written file, unless a sync
        that started after that append finished while this one waited for the lock."""
        with self._sync_lock:
            if self._synced >= mine:
                return
            with self._lock:
                target = self._written
                dirty = [s for s in self._segments.values() if s.dirty]
                new = any(s.new for s in dirty)
                for segment in dirty:
                    segment.dirty = segment.new = False
            for segment in dirty:
                os.fsync(segment.fd)  # type: ignore[arg-type]
            if new:  # the new segment's name in the folder must survive a crash too
                folder = os.open(self.folder, os.O_RDONLY)
                try:
                    os.fsync(folder)
                finally:
                    os.close(folder)
            with self._lock:
                self._synced = target
                for segment in [s for s in self._segments.values() if s is not self._active and s.fd is not None
                                and not s.dirty]:
                    os.close(segment.fd)  # type: ignore[arg-type]  # full and synced: no more writes to it
                    segment.fd = None
