"""Inspect's `.eval` logs: a zip of JSON members (docs/formats/inspect.md §2), read one member at a time.

Members are Zstandard-compressed (zip method 93) by current Inspect and deflated by older
releases; Python 3.11's zipfile reads only the latter. Both are read with the zipfile of
Python 3.14, which reads method 93 natively, through its maintained backport
(`backports.zstd`, the PEP 784 backport) on older Pythons: the standard zipfile API
unchanged, streaming decompression with CRC checks, no monkey-patching of the process's
zipfile (the `zipfile-zstd` package Inspect uses patches it globally), no hand-made parsing of
local headers.

Every entry passes the checks any zip gets (ingest/sources.py `check_member`: names escaping
the archive, symbolic links, declared sizes and ratio) and the archive's total size is capped.
A JSON member is decompressed as a stream, its size (the record limit) and compression ratio
checked again as the bytes come out, so one sample is in memory at a time however large the
archive. Duplicate names are the one
difference: Inspect appends a re-logged sample under the same name, and every Inspect reader
takes the last entry; so does this one. An `.eval` that is itself a member of a zip is copied
to a temporary file first (a zip needs random access), as a stream.
"""

from __future__ import annotations

import json
import shutil
import struct
import sys
import tempfile
import zlib
from typing import Any, BinaryIO

import orjson

from ....errors import BadInputError
from ...sources import CHUNK, ZIP_OPEN_ERRORS, Limits, SourceFile, check_member

if sys.version_info >= (3, 14):
    import zipfile
    from compression.zstd import ZstdError
else:
    from backports.zstd import ZstdError, zipfile

LOCAL_HEADER = struct.Struct("<4s2xH10xI4x2H")  # signature, flags, compressed size, name length, extra length
# What a damaged member raises while it streams out: bad CRC, truncated or corrupt zstd/deflate data.
READ_ERRORS = (zipfile.BadZipFile, ZstdError, zlib.error, EOFError, OSError, NotImplementedError)


class EvalArchive:
    """An open `.eval` file: its members by name (last entry wins), each readable as JSON."""

    def __init__(self, file: SourceFile, limits: Limits):
        self.file, self.limits = file, limits
        self.stream = _seekable(file)
        try:
            self.zip = zipfile.ZipFile(self.stream)
            entries = self.zip.infolist()
        except (zipfile.BadZipFile, *ZIP_OPEN_ERRORS) as e:
            cut = _where_cut(self.stream)
            self.stream.close()
            raise BadInputError(file.display, f"not a readable .eval archive (truncated or corrupt: {e})"
                                + (f"; {cut}" if cut else "")) from None
        self.members = self._checked(entries)

    def __enter__(self) -> EvalArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.zip.close()
        self.stream.close()

    def _checked(self, entries: list[zipfile.ZipInfo]) -> dict[str, zipfile.ZipInfo]:
        members: dict[str, zipfile.ZipInfo] = {}
        total = 0
        for info in entries:
            if info.is_dir():
                continue
            check_member(self.file.display, info, self.limits)
            total += info.file_size  # dead (superseded) entries count too: they are in the file
            if total > self.limits.max_total_bytes:
                raise BadInputError(self.file.display, f"entries decompress to more than the "
                                    f"{self.limits.max_total_bytes}-byte limit for one archive (zip bomb?)")
            members.pop(info.filename, None)  # a later entry of the same name replaces it, in its place
            members[info.filename] = info
        return members

    def where(self, name: str) -> str:
        return f"{self.file.display}!{name}"

    def read_json(self, name: str) -> Any:
        """One member, decompressed as a stream and parsed; errors name the member."""
        info, where, cap = self.members[name], self.where(name), self.limits.max_line_bytes
        if info.file_size > cap:
            raise BadInputError(where, f"entry is {info.file_size} bytes, over the {cap}-byte limit for one record")
        try:
            with self.zip.open(info) as member:
                data = self._bounded(member, info, where)
        except READ_ERRORS as e:
            raise BadInputError(where, f"corrupt or truncated entry: {e}") from None
        return parse_json(data, where)

    def _bounded(self, member: BinaryIO, info: zipfile.ZipInfo, where: str) -> bytes:
        """The member's bytes, its size and ratio checked as they come out: a header that lies
        about the sizes changes nothing."""
        limits = self.limits
        ratio_cap = max(int(limits.max_ratio * info.compress_size), limits.min_ratio_bytes)
        chunks, count = [], 0
        while chunk := member.read(CHUNK):
            count += len(chunk)
            if count > limits.max_line_bytes:
                raise BadInputError(where, f"entry decompresses to more than the {limits.max_line_bytes}-byte "
                                           "limit for one record")
            if count > ratio_cap:
                raise BadInputError(where, f"entry decompresses to more than {limits.max_ratio:.0f} times its "
                                           f"{info.compress_size} compressed bytes (a decompression bomb?); refusing it")
            chunks.append(chunk)
        return b"".join(chunks)


def parse_json(data: bytes, where: str) -> Any:
    """orjson, and Python's decoder where orjson stops: Inspect writes NaN and Infinity as bare tokens."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(data)
    except UnicodeDecodeError as e:
        raise BadInputError(where, f"not valid UTF-8 (byte {e.start})") from None
    except ValueError as e:
        raise BadInputError(where, f"invalid JSON: {e}") from None
    except RecursionError:  # Python's decoder recurses per level; orjson stops at 1024 levels
        raise BadInputError(where, "invalid JSON: arrays or objects nested too deep to read") from None


def _seekable(file: SourceFile) -> BinaryIO:
    stream = file.open()
    if stream.seekable():
        return stream
    spool = tempfile.TemporaryFile(prefix="tracewh-eval-")
    try:
        with stream:
            shutil.copyfileobj(stream, spool, CHUNK)  # the source's own caps apply as it streams
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool  # type: ignore[return-value]


def _where_cut(stream: BinaryIO) -> str | None:
    """For the error message only: the entry a cut-short archive ends in, found by walking the
    local headers from the start (Inspect writes their sizes there, no data descriptors).
    None when that cannot be told."""
    try:
        end = stream.seek(0, 2)
        stream.seek(0)
        last = None
        while len(head := stream.read(LOCAL_HEADER.size)) == LOCAL_HEADER.size:
            signature, flags, size, name_len, extra_len = LOCAL_HEADER.unpack(head)
            if signature != b"PK\x03\x04" or flags & 0x08 or size == 0xFFFFFFFF:
                break
            name = stream.read(name_len).decode("utf-8", errors="replace")
            data_end = stream.tell() + extra_len + size
            if data_end > end:
                return f"the file ends inside entry {name!r}"
            last = stream.seek(data_end) and name
        return f"the file ends after entry {last!r}, before the archive's directory" if last else None
    except OSError:
        return None
