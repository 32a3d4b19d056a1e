"""An emulated network link in front of any :class:`~edgespec.runtime.edge.drafter.Verifier`.

:class:`EmulatedLinkVerifier` delays each ``open`` and ``verify`` call as a slower link
would: before forwarding it sleeps the request's one-way delay, after the reply the
reply's, each RTT/2 + jitter + bytes / bandwidth (:func:`edgespec.core.link_delay.
one_way_delay_s`, the simulator's link model: exponential jitter of mean ``jitter_ms``;
message sizes from the simulator's ``uplink_bytes`` / ``downlink_bytes``). The sleeps
happen inside the verifier call, so the drafter's measured network time (RPC wall time
minus the server's queue and verify time) includes them. A fused run (``run_fused``) pays
its request's uplink delay once, then each streamed round its own downlink delay from
when it reached the device, in order: chunks in flight overlap, as on a real link (a
reader thread takes them off the stream as they come). ``close`` is not delayed, and a
call that raises pays only its request's delay. Off by default: ``edgespec draft`` wraps
its verifier only when a ``--link-*`` flag or ``link_*`` config field asks for it.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, get_args

from edgespec.core.link_delay import (
    HEADER_BYTES,
    DraftProbsWire,
    link_setting_problem,
    one_way_delay_s,
)
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.wire.link_bytes import open_bytes, verify_call_bytes, verify_reply_bytes

if TYPE_CHECKING:  # kept light: draft_command imports this module to build the CLI parser
    import numpy as np

    from edgespec.runtime.edge.rounds import Verifier
    from edgespec.runtime.messages import (
        FusedCall,
        FusedRound,
        SessionSpec,
        VerifyCall,
        VerifyReply,
    )


def _check(name: str, value: float) -> None:
    problem = link_setting_problem(name, value)
    if problem is not None:
        raise ValueError(f"{name} {problem}")


@dataclass(frozen=True, slots=True)
class LinkEmulation:
    """Link settings: round-trip time and mean jitter in ms (jitter: the mean of an
    exponential extra delay per message), bandwidth in Mbit/s (0 or ``None``: unlimited);
    ``draft_probs``: how a sampled block's q is counted (the simulator's scenario field of
    that name: ``dense``, the papers' V fp16 a row, or ``compact``, each row's kept entries
    as gRPC sends them)."""

    rtt_ms: float = 0.0
    jitter_ms: float = 0.0
    bandwidth_mbps: float | None = None
    draft_probs: DraftProbsWire = "dense"

    def __post_init__(self) -> None:
        _check("rtt_ms", self.rtt_ms)
        _check("jitter_ms", self.jitter_ms)
        if self.bandwidth_mbps is not None:
            _check("bandwidth_mbps", self.bandwidth_mbps)
        if self.draft_probs not in get_args(DraftProbsWire):
            raise ValueError(f"draft_probs must be dense or compact, got {self.draft_probs!r}")

    @property
    def enabled(self) -> bool:
        """Whether the link delays anything at all."""
        return self.rtt_ms > 0 or self.jitter_ms > 0 or bool(self.bandwidth_mbps)

    @property
    def bandwidth_bytes_per_s(self) -> float:
        """Bytes per second; ``math.inf`` when unlimited."""
        return self.bandwidth_mbps * 1e6 / 8.0 if self.bandwidth_mbps else math.inf

    def delay_s(self, payload_bytes: int, rng: np.random.Generator) -> float:
        """One message's one-way delay (one draw from ``rng`` when there is jitter)."""
        return one_way_delay_s(
            self.rtt_ms / 1000.0,
            payload_bytes,
            self.bandwidth_bytes_per_s,
            self.jitter_ms / 1000.0,
            rng.random,
        )


@dataclass(frozen=True, slots=True)
class LinkTransfer:
    """One delayed call: its message sizes and the delays slept (downlink 0 when the call
    raised)."""

    method: str
    uplink_bytes: int
    uplink_s: float
    downlink_bytes: int = 0
    downlink_s: float = 0.0


class EmulatedLinkVerifier:
    """``inner`` behind an emulated link; ``transfers`` records every delayed call."""

    __slots__ = ("_clock", "_rng", "_sleep", "_transfers", "inner", "link")

    def __init__(
        self,
        inner: Verifier,
        link: LinkEmulation,
        rng: np.random.Generator,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.inner = inner
        self.link = link
        self._rng = rng
        self._sleep = sleep
        self._clock = clock
        self._transfers: list[LinkTransfer] = []

    @property
    def transfers(self) -> tuple[LinkTransfer, ...]:
        return tuple(self._transfers)

    @property
    def total_delay_s(self) -> float:
        """All the delay slept so far."""
        return sum(t.uplink_s + t.downlink_s for t in self._transfers)

    def _wait(self, payload_bytes: int) -> float:
        delay = self.link.delay_s(payload_bytes, self._rng)
        if delay > 0:
            self._sleep(delay)
        return delay

    def open(self, spec: SessionSpec) -> None:
        self._open(spec, lambda: self.inner.open(spec))

    def open_within(
        self, spec: SessionSpec, timeout_s: float, cancel: threading.Event | None
    ) -> None:
        """:meth:`open`, the call bounded as the inner verifier can bound it
        (:func:`~edgespec.runtime.edge.bounded_calls.open_bounded`), the link's delays not."""
        from edgespec.runtime.edge.bounded_calls import open_bounded

        self._open(spec, lambda: open_bounded(self.inner, spec, timeout_s, cancel))

    def _open(self, spec: SessionSpec, call: Callable[[], None]) -> None:
        size = open_bytes(spec)
        up = self._wait(size)
        self._transfers.append(LinkTransfer("open", size, up))
        call()
        down = self._wait(HEADER_BYTES)
        self._transfers[-1] = LinkTransfer("open", size, up, HEADER_BYTES, down)

    def verify(self, call: VerifyCall) -> VerifyReply:
        return self._verify(call, lambda: self.inner.verify(call))

    def verify_within(
        self, call: VerifyCall, timeout_s: float, cancel: threading.Event | None = None
    ) -> VerifyReply:
        """:meth:`verify`, the call bounded as the inner verifier can bound it
        (:func:`~edgespec.runtime.edge.bounded_calls.verify_bounded`), the link's delays not."""
        from edgespec.runtime.edge.bounded_calls import verify_bounded

        return self._verify(call, lambda: verify_bounded(self.inner, call, timeout_s, cancel))

    def _verify(self, call: VerifyCall, verified: Callable[[], VerifyReply]) -> VerifyReply:
        size = verify_call_bytes(call, self.link.draft_probs)
        up = self._wait(size)
        self._transfers.append(LinkTransfer("verify", size, up))
        reply = verified()
        reply_size = verify_reply_bytes(reply)
        down = self._wait(reply_size)
        self._transfers[-1] = LinkTransfer("verify", size, up, reply_size, down)
        return reply

    def run_fused(self, call: FusedCall) -> Iterator[FusedRound]:
        """The fused request after its uplink delay (a header: nothing drafted); each
        streamed round delivered its downlink delay after it reached the device, and
        never before the round ahead of it. One transfer per round, the first with the
        request's uplink."""
        run = getattr(self.inner, "run_fused", None)
        if run is None:
            raise RequestError(
                ErrorCode.FAILED_PRECONDITION,
                f"verifier {type(self.inner).__name__} cannot run fused rounds",
            )
        size = HEADER_BYTES
        up = self._wait(size)
        self._transfers.append(LinkTransfer("fused", size, up))
        delivered = -math.inf
        for index, (fused_round, received) in enumerate(_received(run(call), self._clock)):
            reply_size = verify_reply_bytes(fused_round.reply)
            down = self.link.delay_s(reply_size, self._rng)
            delivered = max(received + down, delivered)
            wait = delivered - self._clock()
            if wait > 0:
                self._sleep(wait)
            if index == 0:
                self._transfers[-1] = LinkTransfer("fused", size, up, reply_size, down)
            else:
                self._transfers.append(LinkTransfer("fused", 0, 0.0, reply_size, down))
            yield fused_round

    def close(self, session_id: str) -> None:
        self.inner.close(session_id)


_END = object()


def _received(
    items: Iterator[FusedRound], clock: Callable[[], float]
) -> Iterator[tuple[FusedRound, float]]:
    """``items`` with the time each was taken off the stream, read on a daemon thread as
    soon as it comes (so a consumer that sleeps does not delay the next arrival)."""
    inbox: queue.Queue[object] = queue.Queue()

    def read() -> None:
        try:
            for item in items:
                inbox.put((item, clock()))
            inbox.put(_END)
        except BaseException as exc:  # raised to the consumer below
            inbox.put(exc)

    threading.Thread(target=read, daemon=True, name="fused-link-reader").start()
    while (got := inbox.get()) is not _END:
        if isinstance(got, BaseException):
            raise got
        yield got  # type: ignore[misc]


# --- edgespec draft: the configured link


def link_from_config(config: Any) -> LinkEmulation | None:
    """The link a :class:`~edgespec.runtime.edge.config.DrafterConfig` asks for;
    ``None`` when off."""
    link = LinkEmulation(config.link_rtt_ms, config.link_jitter_ms, config.link_bandwidth_mbps,
                         config.link_draft_probs)  # fmt: skip
    return link if link.enabled else None


def check_link_mode(config: Any, mode: str) -> None:
    """A ``ConfigError`` when a link is configured for a mode that does not draft (the
    centralized and fused baselines stream through another call)."""
    from edgespec.config import ConfigError

    if link_from_config(config) is not None and mode != "distributed":
        raise ConfigError("link_rtt_ms", f"the emulated link needs --mode distributed, not {mode}")


def wrap_verifier(verifier: Verifier, config: Any) -> Verifier:
    """``verifier`` behind the configured link (itself when the link is off)."""
    import numpy as np

    link = link_from_config(config)
    if link is None:
        return verifier
    return EmulatedLinkVerifier(verifier, link, np.random.default_rng(config.link_seed))
