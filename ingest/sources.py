"""Turn the paths a user names into sources (one batch each) of data files, safely.

A source is one zip, one file, or one directory. Reading is streamed: nothing here
holds a whole archive or file in memory. Archives are checked before a byte is
parsed: entries escaping the archive, absurd compression ratios and oversized
members are refused.
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import io
import os
import stat
import zipfile
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from ..errors import BadInputError

# .binpb: binary protobuf (OTLP files in the Collector's proto framing). Not .pb or .proto, which
# name unrelated files (model graphs, schemas) a run folder may hold beside its logs.
DATA_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz", ".json", ".json.gz", ".eval", ".binpb", ".binpb.gz")
CHUNK = 1 << 20
NOT_DATA = "not a file tracewh reads (it reads .zip, .jsonl[.gz], .json, .eval and .binpb files, and folders of them)"


@dataclass(frozen=True)
class Limits:
    """Guards against hostile or broken input; all overridable from the CLI."""

    max_member_bytes: int = 16 << 30  # one decompressed file
    max_total_bytes: int = 64 << 30  # all members of one archive, decompressed
    max_line_bytes: int = 32 << 20  # one JSON record: what ingest holds within 1.5 GB of memory (docs/reliability.md)
    max_ratio: float = 200.0  # decompressed / compressed, checked as the bytes stream out
    min_ratio_bytes: int = 1 << 20  # any stream may give this much, whatever its ratio


@dataclass(slots=True)  # a folder may list hundreds of thousands of them (235k at bench scale 10)
class SourceFile:
    """One data file of a source; `open()` gives a fresh decompressed binary stream."""

    name: str  # path inside the source, '/'-separated
    display: str  # how errors name it, e.g. runs.zip!logs/a.jsonl
    stored_bytes: int  # bytes as stored (compressed), for progress
    open: Callable[[], BinaryIO]
    plain_bytes: int | None = None  # decompressed size when known, to scale progress
    seekable: bool = False  # open() gives the bytes as stored, where seek() is cheap: a reader may start mid-file
    first_line: int = 1  # of a range of a larger file (file_range): the number its first line has there


@dataclass
class Source:
    """One batch to ingest: its display name, content digest and data files."""

    path: Path
    kind: str  # zip | file | directory
    hashed: str | Future[str]  # the digest, or a single file's while a thread hashes it
    files: list[SourceFile]  # data files (.jsonl, .json, ...)
    others: list[SourceFile]  # everything else (README, profile cards, ...): readable, unparsed

    @property
    def digest(self) -> str:
        """The content's sha256 (hex), which names the batch and seeds its event ids."""
        if not isinstance(self.hashed, str):
            self.hashed = self.hashed.result()
        return self.hashed

    @property
    def stored_bytes(self) -> int:
        return sum(f.stored_bytes for f in self.files)


def is_data_file(name: str) -> bool:
    return name.lower().endswith(DATA_SUFFIXES)


def file_digest(path: Path | str) -> str:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(CHUNK):
                h.update(chunk)
    except OSError as e:
        raise BadInputError(str(path), f"cannot be read: {e.strerror or e}") from None
    return h.hexdigest()


def expand(paths: list[Path], limits: Limits = Limits(),
           skipped: list[tuple[str, str]] | None = None) -> Iterator[Source]:
    """Sources in the order given; a directory's zips become sources of their own. What a folder
    holds that no source reads (a folder of .csv files, an empty folder) is appended to
    `skipped` as (name, why)."""
    skipped = [] if skipped is None else skipped
    for path in paths:
        try:
            path.stat()
        except OSError as e:
            raise _unreadable(str(path), e) from None
        if path.is_dir():
            yield from _directory_sources(path, limits, skipped)
            continue
        _regular(path, str(path))
        if path.suffix.lower() == ".zip":
            yield open_zip(path, limits)
        else:
            yield _file_source(path, limits)


def _regular(path: Path, display: str) -> None:
    """Only regular files are read: a FIFO or a device (/dev/zero) would hang or never end."""
    try:
        mode = path.stat().st_mode
    except OSError as e:
        raise _unreadable(display, e) from None
    if not stat.S_ISREG(mode):
        raise BadInputError(display, "not a regular file (a FIFO, device or socket); refusing it")


def _unreadable(display: str, error: OSError) -> BadInputError:
    """A path that cannot be opened, saying why in the user's terms."""
    if error.errno == errno.ELOOP:
        return BadInputError(display, "a symbolic link loop (links that lead to each other, never to a file); "
                             "refusing it")
    if error.errno == errno.ENOENT:
        return BadInputError(display, "no such file or directory" if not os.path.islink(display) else
                             "a symbolic link to nothing (its target does not exist)")
    return BadInputError(display, f"cannot be read: {error.strerror or error}")


def _file_source(path: Path, limits: Limits) -> Source:
    if not is_data_file(path.name):
        raise BadInputError(str(path), f"not a supported input (expected .zip or one of {', '.join(DATA_SUFFIXES)})")
    return Source(path, "file", _hashed_aside(path), [_local_file(path, path.name, str(path), limits)], [])


def _hashed_aside(path: Path) -> Future[str]:
    """file_digest(path), in a thread of its own: hashlib lets go of the GIL, so a large file is
    hashed while discovery reads it (a native file's lines are counted, adapters/native/ranges.py:
    0.4-0.5 s a GB, the hash 0.7 s). The pipeline asks for the digest once discovery is done."""
    hashing = ThreadPoolExecutor(1, thread_name_prefix="tracewh-digest")
    hashed = hashing.submit(file_digest, path)  # an error is raised where the digest is asked for
    hashing.shutdown(wait=False)  # the thread ends with the hash
    return hashed


def memory_source(label: str, name: str, data: bytes) -> Source:
    """Bytes a process holds (the OTLP receiver's requests) as a one-file source named `name`;
    `label` is how `tracewh log` shows where it came from."""
    file = SourceFile(name, label, len(data), lambda: io.BytesIO(data), len(data))
    return Source(Path(label), "memory", hashlib.sha256(data).hexdigest(), [file], [])


def _directory_files(root: Path) -> list[tuple[str, str, int]]:
    """(path, name inside `root`, size) of every file under it, in name order. A symbolic link is
    followed only to a regular file inside `root`; anything else (a link out of the folder, a
    FIFO, a device) refuses the folder. Plain strings and os.scandir, not Path objects: a
    DecisionBench folder of 23.5k files was listed in 0.15 s, against 0.85 s."""
    inside = os.path.realpath(root)
    found: list[tuple[str, str, int]] = []
    folders = [(str(root), "")]
    while folders:
        folder, prefix = folders.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as e:
            raise BadInputError(f"{root}/{prefix}", f"cannot be read: {e.strerror or e}") from None
        subfolders = []
        for entry in entries:
            name = prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                subfolders.append((entry.path, name + "/"))
                continue
            display = f"{root}/{name}"
            if entry.is_symlink() and os.path.commonpath([inside, os.path.realpath(entry.path)]) != inside:
                raise BadInputError(display, "a symbolic link to outside the input folder; refusing the folder")
            found.append((entry.path, name, _regular_size(entry, display)))
        folders += reversed(subfolders)  # the first is read next: a folder's files, then its folders in order
    return sorted(found, key=lambda f: f[1].split("/"))  # as Path objects sort: folder by folder


def _regular_size(entry: os.DirEntry[str], display: str) -> int:
    try:
        info = entry.stat()  # through a link: what it names
    except OSError as e:
        raise _unreadable(display, e) from None
    if not stat.S_ISREG(info.st_mode):
        raise BadInputError(display, "not a regular file (a FIFO, device or socket); refusing it")
    return info.st_size


def _directory_sources(root: Path, limits: Limits, skipped: list[tuple[str, str]]) -> Iterator[Source]:
    files, others, zips = [], [], []
    for path, name, size in _directory_files(root):
        if name.lower().endswith(".zip"):
            zips.append(Path(path))
        else:
            (files if is_data_file(name) else others).append(_local_file(path, name, f"{root}/{name}", limits, size))
    if files:
        yield Source(root, "directory", _folder_digest(root, files + others), files, others)
    else:  # no data file: the folder's other files are not read at all (with data files, adapters may claim them)
        skipped += [(f.display, NOT_DATA) for f in others]
        if not others and not zips:
            skipped.append((str(root), "an empty folder"))
    for z in zips:
        yield open_zip(z, limits)


def _folder_digest(root: Path, files: list[SourceFile]) -> str:
    """sha256 over each file's name and sha256. (Hashing a folder's files in threads was slower:
    a run folder's files are small, and the time goes to Python's work on each, under the GIL.)"""
    h = hashlib.sha256()
    for f in files:
        h.update(f"{f.name}\0{file_digest(os.path.join(root, f.name))}\n".encode())
    return h.hexdigest()


def _local_file(path: Path | str, name: str, display: str, limits: Limits, size: int | None = None) -> SourceFile:
    size = os.stat(path).st_size if size is None else size
    where = str(path)  # not the Path: a Path object and its cached parts cost 0.4 KB a file
    if name.lower().endswith(".gz"):
        opener = partial(_open_local_gzip, where, display, _Bound(limits, size))
    else:
        if size > limits.max_member_bytes:
            raise BadInputError(display, f"file is {size} bytes, over the {limits.max_member_bytes}-byte limit")
        opener = partial(_open_local, where, display)
    plain = not name.lower().endswith(".gz")
    return SourceFile(name, display, size, opener, size if plain else None, seekable=plain)


def file_range(file: SourceFile, start: int, end: int, first_line: int) -> SourceFile:
    """Bytes [start, end) of a seekable file, which begin line `first_line` of it, as a file of
    their own, named as the whole file is (errors name it so): how several processes read one
    large file side by side."""
    if not file.seekable:
        raise ValueError(f"{file.display}: not a plain local file, cannot be read from the middle")
    size = end - start
    return SourceFile(file.name, file.display, size, partial(_open_range, file.open, start, size), size,
                      first_line=first_line)


def _open_range(opener: Callable[[], BinaryIO], start: int, size: int) -> BinaryIO:
    stream = opener()
    stream.seek(start)
    return io.BufferedReader(_Window(stream, size), CHUNK)  # type: ignore[return-value]


class _Window(io.RawIOBase):
    """The next `size` bytes of a stream, then end of file."""

    def __init__(self, raw: BinaryIO, size: int):
        self.raw, self.left = raw, size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        n = self.raw.readinto(memoryview(buffer)[: min(len(buffer), self.left)])  # type: ignore[attr-defined]
        self.left -= n
        return n

    def close(self) -> None:
        self.raw.close()
        super().close()


def _open_local_gzip(path: str, display: str, bound: _Bound) -> BinaryIO:
    return _gunzip(_open_local(path, display), bound, display)


def _open_local(path: str, display: str) -> BinaryIO:
    try:
        return open(path, "rb")
    except OSError as e:
        raise BadInputError(display, f"cannot be read: {e.strerror or e}") from None


# The exceptions a damaged or unusual zip raises on opening, besides its module's BadZipFile
# (Python's zipfile, or the zstd backport's for .eval), each turned into a refusal naming the
# file (exit 2): zipfile's own "not implemented" error for a zip version or compression method
# it does not read (the third class below), and ValueError for a member name that does not decode.
ZIP_OPEN_ERRORS = (OSError, EOFError, NotImplementedError, ValueError)


def open_zip(path: Path, limits: Limits) -> Source:
    archive = _Archive(path)
    try:
        members = archive.zip.infolist()
    except (zipfile.BadZipFile, *ZIP_OPEN_ERRORS) as e:
        raise BadInputError(str(path), f"not a readable zip archive (truncated or corrupt): {e}") from None
    files, others, seen, total = [], [], set(), 0
    for info in members:
        if info.is_dir():
            continue
        check_member(path, info, limits)
        if info.filename in seen:
            raise BadInputError(f"{path}!{info.filename}", "the archive holds two entries of this name; refusing the archive")
        seen.add(info.filename)
        total += info.file_size
        if total > limits.max_total_bytes:
            raise BadInputError(str(path), f"entries decompress to more than the {limits.max_total_bytes}-byte limit "
                                "for one archive (zip bomb?); refusing the archive")
        member = _zip_member(archive, path, info, limits)
        (files if is_data_file(info.filename) else others).append(member)
    return Source(path, "zip", file_digest(path), files, others)


def check_member(path: Path | str, info: zipfile.ZipInfo, limits: Limits) -> None:
    """The safety checks of one archive entry (also applied to the members of Inspect's .eval logs)."""
    display = f"{path}!{info.filename}"
    name = PurePosixPath(info.filename.replace("\\", "/"))
    if name.is_absolute() or ".." in name.parts or ":" in info.filename:
        raise BadInputError(display, "zip entry escapes the archive (absolute path or '..'); refusing the archive")
    if stat.S_ISLNK(info.external_attr >> 16):
        raise BadInputError(display, "zip entry is a symbolic link; refusing the archive")
    if info.file_size > limits.max_member_bytes:
        raise BadInputError(display, f"entry is {info.file_size} bytes decompressed, over the {limits.max_member_bytes}-byte limit")
    ratio = info.file_size / max(info.compress_size, 1)
    if info.file_size > limits.min_ratio_bytes and ratio > limits.max_ratio:
        raise BadInputError(display, f"compression ratio {ratio:.0f}:1 exceeds {limits.max_ratio:.0f}:1 (zip bomb?); refusing the archive")


class _Archive:
    """A zip archive, opened once per process for all its members. Pickled (for a staging worker,
    ingest/workers.py) as its path alone: a ZipFile, and the file offset under it, cannot be
    shared between processes, so a worker opens the archive again."""

    def __init__(self, path: Path):
        self.path, self._zip = path, None

    @property
    def zip(self) -> zipfile.ZipFile:
        if self._zip is None:
            self._zip = zipfile.ZipFile(self.path)
        return self._zip

    def __getstate__(self) -> Path:
        return self.path

    def __setstate__(self, path: Path) -> None:
        self.path, self._zip = path, None


@dataclass(frozen=True, slots=True)
class _ZipMember:
    """Opens one member of an archive: a fresh, capped, decompressed stream each call."""

    archive: _Archive
    info: zipfile.ZipInfo
    display: str
    limits: Limits

    def __call__(self) -> BinaryIO:
        try:
            stream: BinaryIO = self.archive.zip.open(self.info)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, RuntimeError, *ZIP_OPEN_ERRORS) as e:
            # a corrupt header, an unknown compression, encryption (RuntimeError), truncation
            raise BadInputError(self.display, f"cannot be read from the archive: {e}") from None
        bound = _Bound(self.limits, self.info.compress_size)
        if self.info.filename.lower().endswith(".gz"):
            return _gunzip(stream, bound, self.display)
        return _capped(stream, bound, self.display)


def _zip_member(archive: _Archive, path: Path, info: zipfile.ZipInfo, limits: Limits) -> SourceFile:
    display = f"{path}!{info.filename}"
    plain = None if info.filename.lower().endswith(".gz") else info.file_size
    return SourceFile(info.filename, display, info.compress_size, _ZipMember(archive, info, display, limits), plain)


@dataclass(frozen=True)
class _Bound:
    """How many bytes a compressed stream may give: the size limit, and the ratio to the bytes it
    came from (every stream, small ones too: 8 KB of compressed newlines would otherwise cost
    a minute of parsing). Checked as the bytes come out, so a lying header changes nothing."""

    limits: Limits
    compressed: int

    @property
    def ratio_cap(self) -> int:
        return max(int(self.limits.max_ratio * self.compressed), self.limits.min_ratio_bytes)


class _CappedReader(io.RawIOBase):
    """Decompressed bytes within their bound, and decoder failures named by file."""

    def __init__(self, raw: BinaryIO, bound: _Bound, display: str, owned: BinaryIO | None = None):
        self.raw, self.bound, self.display, self.count = raw, bound, display, 0
        self.owned = owned  # the compressed stream under `raw`, which GzipFile leaves open

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        try:
            data = self.raw.read(len(buffer))
        except (zipfile.BadZipFile, zlib.error, gzip.BadGzipFile, EOFError, OSError, NotImplementedError,
                RuntimeError, ValueError) as e:
            raise BadInputError(self.display, f"corrupt or truncated data: {e}") from None
        self.count += len(data)
        if self.count > self.bound.limits.max_member_bytes:
            raise BadInputError(self.display, f"decompresses to more than the {self.bound.limits.max_member_bytes}-byte limit")
        if self.count > self.bound.ratio_cap:
            raise BadInputError(self.display, f"decompresses to more than {self.bound.limits.max_ratio:.0f} times its "
                                f"{self.bound.compressed} compressed bytes (a decompression bomb?); refusing it")
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self.raw.close()
        if self.owned is not None:
            self.owned.close()
        super().close()


def _capped(raw: BinaryIO, bound: _Bound, display: str, owned: BinaryIO | None = None) -> BinaryIO:
    return io.BufferedReader(_CappedReader(raw, bound, display, owned), CHUNK)  # type: ignore[return-value]


def _gunzip(compressed: BinaryIO, bound: _Bound, display: str) -> BinaryIO:
    return _capped(gzip.GzipFile(fileobj=compressed), bound, display, owned=compressed)  # type: ignore[arg-type]
