"""uvicorn's log lines that a client can cause at line rate, kept out of the device's log:
:class:`WithoutPerRequestLines` is ``uvicorn.error`` as each connection of the endpoint
logs to it (:class:`~edgespec.runtime.openai_api.connections.BoundedH11Protocol`)."""

from __future__ import annotations

import logging

UVICORN_INVALID_REQUEST = "Invalid HTTP request received."
"""The line uvicorn's h11 protocol logs for every malformed request (``uvicorn.error``)."""
UVICORN_PER_REQUEST = (UVICORN_INVALID_REQUEST, "Unsupported upgrade request.", "No supported We")
"""The starts of the lines uvicorn's h11 protocol logs for each such request: a malformed
one, and the two for an ``Upgrade`` header (the request is answered as plain HTTP)."""


class WithoutPerRequestLines(logging.Logger):
    """``uvicorn.error`` as one connection logs to it, less uvicorn's lines for each request
    a client can send at line rate (:data:`UVICORN_PER_REQUEST`: a malformed one,
    :meth:`~edgespec.runtime.openai_api.connections.BoundedH11Protocol.send_400_response`
    logs those, throttled; an ``Upgrade``);
    every other record goes on to that logger, at its level."""

    def __init__(self, inner: logging.Logger) -> None:
        super().__init__(inner.name, inner.level)
        self.parent = inner  # whose level counts when this one's is NOTSET
        self._inner = inner

    def handle(self, record: logging.LogRecord) -> None:
        if not (isinstance(record.msg, str) and record.msg.startswith(UVICORN_PER_REQUEST)):
            self._inner.handle(record)
