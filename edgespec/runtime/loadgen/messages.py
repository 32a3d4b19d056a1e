"""What a client process tells the parent on its pipe, one message per event of a request
(arrived, started, progressed, finished, failed), and ``SetupFailed`` when the process
cannot start its clients (a draft that does not load)."""

from __future__ import annotations

from dataclasses import dataclass

from edgespec.core.types import RequestRecord


@dataclass(frozen=True, slots=True)
class Arrived:
    """A Poisson arrival: queued for a free client, or ``dropped`` (the queue was full)."""

    request_id: str
    slo_index: int
    dropped: bool


@dataclass(frozen=True, slots=True)
class Started:
    request_id: str
    worker: int
    incarnation: int
    prompt_index: int


@dataclass(frozen=True, slots=True)
class Progressed:
    """The request committed its first tokens: its session is open, more rounds to come."""

    request_id: str


@dataclass(frozen=True, slots=True)
class Finished:
    request_id: str
    prompt_index: int
    record: RequestRecord
    output: tuple[int, ...]
    num_reconnects: int
    num_resends: int = 0  # verify calls sent again past their deadline


@dataclass(frozen=True, slots=True)
class Failed:
    request_id: str
    prompt_index: int
    code: str  # a gRPC status code name, or CLIENT_ERROR for an exception of the client
    message: str


@dataclass(frozen=True, slots=True)
class SetupFailed:
    """The process could not set its clients up: why, in one line."""

    message: str
