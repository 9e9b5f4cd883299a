"""Which files hold OTLP traces, and their ExportTraceServiceRequests, one at a time.

Two layouts (docs/formats/otel.md §4), told apart by content, never by file name:

- `otlp-json`: JSON lines, one OTLP/JSON ExportTraceServiceRequest per line, as the Collector's
  file exporter writes them (`{"resourceSpans": [...]}`). OTLP/JSON is protobuf's JSON mapping
  with hex trace and span ids (§3): the ids are rewritten to base64 before protobuf's own parser
  reads the line, which would otherwise decode hex as base64 without a word.
- `otlp-proto`: the Collector's `format: proto` framing: a 4-byte big-endian length, then that
  many bytes of a serialized request, repeated. The OTLP/HTTP receiver hands its requests to the
  pipeline framed the same way (`frame`).

Protobuf is parsed by the opentelemetry-proto package's generated classes, never by hand.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

import orjson

from ....errors import BadInputError
from ...context import AdapterContext
from ...jsonlines import json_lines
from ...sources import SourceFile

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

JSON_FORMAT = "otlp-json"
PROTO_FORMAT = "otlp-proto"
LENGTH_BYTES = 4  # the frame header of the Collector's proto files
SPAN_ID_KEYS = ("traceId", "spanId", "parentSpanId")
LINK_ID_KEYS = ("traceId", "spanId")


def sniff(file: SourceFile, ctx: AdapterContext) -> str | None:
    first = ctx.first(file)
    if first is not None:
        return JSON_FORMAT if "resourceSpans" in first else None
    return PROTO_FORMAT if _starts_with_a_request(file, ctx) else None


def _starts_with_a_request(file: SourceFile, ctx: AdapterContext) -> bool:
    """The first frame is a whole, non-empty ExportTraceServiceRequest (a file of any other
    binary content almost never is: its first four bytes would have to give a length the file
    holds, and those bytes parse as resource spans)."""
    try:
        with file.open() as stream:
            size = _frame_size(stream, ctx.limits.max_line_bytes)
            body = stream.read(size) if size else b""
    except BadInputError:
        return False
    if not size or len(body) != size:
        return False
    try:
        return len(from_proto(body, file.display).resource_spans) > 0
    except BadInputError:
        return False


def _request_class() -> type[ExportTraceServiceRequest]:
    """The generated class, imported once an OTLP file is met: protobuf and the generated
    classes cost 30 ms, which every ingest of another format would pay at start."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    return ExportTraceServiceRequest


def requests(fmt: str, file: SourceFile, ctx: AdapterContext) -> Iterator[tuple[int, ExportTraceServiceRequest]]:
    """(line or frame number, request) for every request of the file, 1-based."""
    if fmt == JSON_FORMAT:
        for line, record in json_lines(file, ctx.limits.max_line_bytes, ctx.progress):
            yield line, from_json(record, file.display, line)
    else:
        yield from _frames(file, ctx)
        ctx.progress(file.stored_bytes)


def _frames(file: SourceFile, ctx: AdapterContext) -> Iterator[tuple[int, ExportTraceServiceRequest]]:
    with file.open() as stream:
        number = 0
        while size := _frame_size(stream, ctx.limits.max_line_bytes, file.display, number + 1):
            number += 1
            body = stream.read(size)
            if len(body) != size:
                raise BadInputError(file.display, f"frame {number}: the file ends {size - len(body)} bytes before "
                                    "the message it announces (truncated?)")
            yield number, from_proto(body, file.display, f"frame {number}")


def _frame_size(stream: BinaryIO, limit: int, display: str = "", number: int = 1) -> int:
    """The length announced by the next frame header; 0 at the end of the file."""
    header = stream.read(LENGTH_BYTES)
    if len(header) not in (0, LENGTH_BYTES):
        raise BadInputError(display, f"frame {number}: the file ends inside a frame header (truncated?)")
    size = int.from_bytes(header, "big")
    if size > limit:
        raise BadInputError(display, f"frame {number}: announces {size} bytes, over the {limit}-byte record limit")
    return size


def from_proto(body: bytes, display: str, where: str | None = None) -> ExportTraceServiceRequest:
    from google.protobuf.message import DecodeError

    try:
        return _request_class().FromString(body)
    except DecodeError as e:
        prefix = f"{where}: " if where else ""
        raise BadInputError(display, f"{prefix}not a protobuf ExportTraceServiceRequest ({e})") from None


def from_json(record: Any, display: str, line: int | None = None) -> ExportTraceServiceRequest:
    """An OTLP/JSON object as the request it encodes: hex ids to bytes, unknown fields ignored (§3)."""
    if not isinstance(record, dict):
        raise BadInputError(display, "expected an OTLP/JSON object", line=line)
    for resource in _each(record, "resourceSpans"):
        for scope in _each(resource, "scopeSpans"):
            for span in _each(scope, "spans"):
                _ids_to_base64(span, SPAN_ID_KEYS, display, line)
                for link in _each(span, "links"):
                    _ids_to_base64(link, LINK_ID_KEYS, display, line)
    from google.protobuf import json_format

    try:
        return json_format.ParseDict(record, _request_class()(), ignore_unknown_fields=True)
    except json_format.ParseError as e:
        raise BadInputError(display, f"not an OTLP/JSON ExportTraceServiceRequest: {e}", line=line) from None


def decode_body(body: bytes, is_json: bool, display: str) -> tuple[ExportTraceServiceRequest, bytes]:
    """One OTLP/HTTP request body (binary protobuf, or OTLP/JSON): the request, and the body as
    the pipeline reads it back: the protobuf as sent, or the JSON as one line of an `otlp-json`
    file (compact: a pretty-printed body spans lines), so `tracewh log` names the encoding sent."""
    if not is_json:
        return from_proto(body, display), body
    try:
        record = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise BadInputError(display, f"invalid JSON: {e}") from None
    line = orjson.dumps(record)  # before from_json rewrites the ids in `record`
    return from_json(record, display), line


def frame(bodies: Iterable[bytes]) -> bytes:
    """Serialized requests in the Collector's proto-file framing (what `requests` reads back)."""
    return b"".join(len(body).to_bytes(LENGTH_BYTES, "big") + body for body in bodies)


def json_lines_of(lines: Iterable[bytes]) -> bytes:
    """OTLP/JSON requests (one line each, from decode_body) as the file exporter's JSON lines."""
    return b"".join(line + b"\n" for line in lines)


def _each(node: dict, key: str) -> list[dict]:
    items = node.get(key)
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def _ids_to_base64(node: dict, keys: tuple[str, ...], display: str, line: int | None) -> None:
    for key in keys:
        value = node.get(key)
        if not isinstance(value, str) or not value:
            continue
        try:
            node[key] = base64.b64encode(bytes.fromhex(value)).decode()
        except (ValueError, binascii.Error):
            raise BadInputError(display, f"{value[:40]!r} is not a hex id (OTLP/JSON writes trace and span ids "
                                "in hex)", line=line, field=key) from None
