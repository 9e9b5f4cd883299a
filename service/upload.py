"""Receiving an upload without trusting it: the caller is authorised before a byte of the
body is read, the declared size is checked before reading, and the body is streamed to disk
through python-multipart's parser with a hard byte limit and an idle timeout, so an upload
that is too large, too slow or not for us never fills memory or disk.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import IO

from fastapi import HTTPException, Request
from python_multipart import MultipartParser
from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import parse_options_header

SAFE_UPLOAD_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")
MULTIPART_SLACK = 64 << 10  # part headers and boundaries around the file


def refusal(status: int, detail: str, headers: dict[str, str] | None = None) -> HTTPException:
    """An upload refused before its body was read to the end. The answer closes the connection:
    otherwise uvicorn, to keep the connection, reads and drops the rest of the body, and the
    client sends all of it (an unauthenticated 1 GB upload went through whole, after the 401)."""
    return HTTPException(status, detail, headers={**(headers or {}), "Connection": "close"})


class _FilePart:
    """The one file field of a multipart body, written to `folder` as it arrives."""

    def __init__(self, folder: Path, suffixes: tuple[str, ...], limit: int):
        self.folder, self.suffixes, self.limit, self.size = folder, suffixes, limit, 0
        self.header_field, self.header_value, self.headers = b"", b"", {}
        self.out: IO[bytes] | None = None
        self.path: Path | None = None

    def callbacks(self) -> dict:
        return {"on_header_field": self._field, "on_header_value": self._value, "on_header_end": self._header_end,
                "on_headers_finished": self._headers_done, "on_part_data": self._data, "on_part_end": self._end}

    def _field(self, data: bytes, start: int, end: int) -> None:
        self.header_field += data[start:end]

    def _value(self, data: bytes, start: int, end: int) -> None:
        self.header_value += data[start:end]

    def _header_end(self) -> None:
        self.headers[self.header_field.lower()] = self.header_value
        self.header_field, self.header_value = b"", b""

    def _headers_done(self) -> None:
        _, options = parse_options_header(self.headers.get(b"content-disposition", b""))
        self.headers = {}
        name = options.get(b"filename", b"").decode("utf-8", "replace")
        if not name:
            return  # a plain form field: ignored
        if self.path is not None:
            raise refusal(400, "one file per upload")
        if not SAFE_UPLOAD_NAME.match(name) or ".." in name or not name.lower().endswith(self.suffixes):
            raise refusal(400, f"refused file name {name!r}: a plain name ending in one of {self.suffixes}")
        self.path = self.folder / name
        self.out = open(self.path, "wb")

    def _data(self, data: bytes, start: int, end: int) -> None:
        if self.out is not None:
            self.size += end - start
            if self.size > self.limit:
                raise refusal(413, f"upload larger than the {self.limit}-byte limit")
            self.out.write(data[start:end])

    def _end(self) -> None:
        if self.out is not None:
            self.out.close()
            self.out = None


async def receive_file(request: Request, folder: Path, limit: int, idle_s: float, suffixes: tuple[str, ...]) -> Path:
    """Stream the multipart body's one file into `folder`; HTTPException on anything off."""
    content_type, options = parse_options_header(request.headers.get("content-type", ""))
    if content_type != b"multipart/form-data" or not options.get(b"boundary"):
        raise refusal(400, "send the file as multipart/form-data (a field named `file`)")
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit + MULTIPART_SLACK:
        raise refusal(413, f"upload larger than the {limit}-byte limit")
    part = _FilePart(folder, suffixes, limit)
    parser = MultipartParser(options[b"boundary"], part.callbacks())
    received = 0
    try:
        async for chunk in _chunks(request, idle_s):
            received += len(chunk)
            if received > limit + MULTIPART_SLACK:
                raise refusal(413, f"upload larger than the {limit}-byte limit")
            parser.write(chunk)
        parser.finalize()
    except MultipartParseError as e:
        raise refusal(400, f"malformed multipart body: {e}") from None
    finally:
        if part.out is not None:
            part.out.close()
    if part.path is None:
        raise refusal(400, "no file in the upload (a multipart field named `file`)")
    return part.path


async def receive_body(request: Request, limit: int, idle_s: float) -> bytes:
    """A small request body (POST /sql's JSON) read whole, with the uploads' guards: the declared
    size checked first, at most `limit` bytes read, and no pause longer than `idle_s`, nor longer
    than `idle_s` in all (a body this small that takes longer is a client holding a connection)."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise refusal(413, f"request body larger than the {limit}-byte limit")
    body = bytearray()
    try:
        async with asyncio.timeout(idle_s):
            async for chunk in _chunks(request, idle_s):
                body += chunk
                if len(body) > limit:
                    raise refusal(413, f"request body larger than the {limit}-byte limit")
    except TimeoutError:
        raise refusal(408, f"the request body took longer than {idle_s:g} s") from None
    return bytes(body)


async def _chunks(request: Request, idle_s: float):  # noqa: ANN202 - an async generator of bytes
    stream = request.stream().__aiter__()
    while True:
        try:
            yield await asyncio.wait_for(stream.__anext__(), idle_s)
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise refusal(408, f"the upload stalled for {idle_s:g} s") from None
