"""OpenTelemetry traces (docs/formats/otel.md): OTLP files as the Collector's file exporter writes
them, JSON lines (`format: json`) or length-prefixed protobuf (`format: proto`), and the requests
the OTLP/HTTP receiver of `tracewh serve` collects (service/otlp.py), framed as the latter.

records.py recognises a file by its content and reads its ExportTraceServiceRequests (§3, §4);
attributes.py turns attribute values into JSON; conventions.py names the GenAI and
OpenInference attributes read (§5, §6); events.py maps each span to one event (§7).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...context import AdapterContext
from ...sources import SourceFile
from ..base import FileAdapter
from . import events, records


class OtelAdapter(FileAdapter):
    name = "otel"
    description = ("OpenTelemetry OTLP traces: JSON lines of ExportTraceServiceRequest ({\"resourceSpans\": ...}) "
                   "or length-prefixed protobuf (.binpb)")

    def sniff(self, file: SourceFile, ctx: AdapterContext) -> str | None:
        return records.sniff(file, ctx)

    def read(self, fmt: str, file: SourceFile, ctx: AdapterContext) -> Iterator[tuple[int, dict[str, Any]]]:
        return events.events(fmt, file, ctx)


ADAPTER = OtelAdapter()
