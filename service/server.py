"""Running the app: uvicorn on loopback by default, with a deadline for request headers.

uvicorn closes idle keep-alive connections but waits forever for the headers of a request
that trickles in a byte at a time (slowloris): 1,000 such connections all stayed open. The
protocol below closes a connection whose request headers are not complete `header_timeout`
seconds after it opened (or after the previous response). Body reads have their own idle
timeout where bodies are read (service/upload.py).
"""

from __future__ import annotations

from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol


def run(app: Any, host: str, port: int, header_timeout: float, max_connections: int) -> None:
    protocol = _with_header_deadline(header_timeout)
    uvicorn.run(app, host=host, port=port, log_level="info", http=protocol, limit_concurrency=max_connections)


def _with_header_deadline(seconds: float) -> type[H11Protocol]:
    class HeaderDeadlineProtocol(H11Protocol):
        deadline = None

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            if self.deadline is not None:
                self.deadline.cancel()
            super().connection_lost(exc)

        def _arm(self) -> None:
            if self.deadline is not None:
                self.deadline.cancel()
            self.deadline = self.loop.call_later(seconds, self._headers_due)

        def _headers_due(self) -> None:
            # IDLE: h11 has not yet seen a whole request line and headers since the deadline was set.
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

    return HeaderDeadlineProtocol
