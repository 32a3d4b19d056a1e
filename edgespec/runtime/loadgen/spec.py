"""What a load run is: :class:`LoadSpec` (arrivals, clients, SLO mix, prompts, duration,
faults), validated once, and the parsers of its list-valued flags."""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from edgespec.core.sampling_params import SamplingParams
from edgespec.errors import UserInputError

Arrivals = Literal["closed", "poisson"]
Mode = Literal["distributed", "centralized"]
MODES: tuple[Mode, ...] = ("distributed", "centralized")
FaultKind = Literal["kill-clients", "restart-server"]
FAULT_KINDS: tuple[FaultKind, ...] = ("kill-clients", "restart-server")
MAX_CLIENTS = 4_096
"""The most ``--clients``: each is a thread of a client process with a session on the
server (16 times a server's default 256 sessions)."""


@dataclass(frozen=True, slots=True)
class ServerAccess:
    """How the load reaches the server: its address and, for a secured one, the bearer
    token and the CA (and the name its certificate holds, when the address is not it)."""

    address: str
    auth_token: str | None = None
    tls_ca: str | None = None
    tls_server_name: str | None = None

    def client(self, timeout_s: float = 30.0) -> Any:
        """A gRPC client of the server (:class:`RemoteVerifier`)."""
        from edgespec.runtime.wire.grpc_client import RemoteVerifier

        return RemoteVerifier(self.address, self.auth_token, self.tls_ca, timeout_s,
                              tls_server_name=self.tls_server_name)  # fmt: skip

    @contextlib.contextmanager
    def connected(self, timeout_s: float = 30.0) -> Iterator[Any]:
        """:meth:`client` for a few calls, its channel closed after them."""
        client = self.client(timeout_s)
        try:
            yield client
        finally:
            client.close_channel()

    def close_sessions(self, session_ids: Iterable[str], timeout_s: float) -> str | None:
        """Close each of ``session_ids`` (one the server no longer holds is no error), each
        within ``timeout_s``: ``None``, or the first refusal in one line (the rest are not
        tried: a server that does not answer one would not answer the next)."""
        from edgespec.runtime.errors import RequestError

        with self.connected(timeout_s) as client:
            for session_id in session_ids:
                try:
                    client.close(session_id)
                except RequestError as exc:
                    return f"{exc.code.value}: {exc.message}"
        return None


@dataclass(frozen=True, slots=True)
class SloShare:
    """An SLO class: its name, token-speed target (tokens/s, ``None``: no target) and its
    share of the requests."""

    name: str
    target_tokens_per_s: float | None
    share: float


@dataclass(frozen=True, slots=True)
class Fault:
    """At ``at_s`` after the start: kill ``count`` client processes with SIGKILL (their
    clients come back as fresh processes), or kill the server and start it again."""

    kind: FaultKind
    at_s: float
    count: int = 1


@dataclass(frozen=True, slots=True)
class LoadSpec:
    """One load run. ``duration_s``: arrivals stop then; requests in flight get
    ``drain_s`` more to finish. Closed loop: each client sends its next request when the
    last one ends; Poisson: ``rate_per_s`` arrivals per second over all clients, each taken
    by a free client (an arrival waits while all ``num_clients`` are busy, and its latency
    counts the wait; ``max_queued`` wait per client process, one more is dropped, and those
    still waiting when the arrivals end are never served). ``mode``: ``distributed`` (the
    clients draft, the server verifies) or ``centralized`` (the server decodes alone, the
    ``Generate`` RPC: a client the server lost fails with its code, it is not resumed)."""

    num_clients: int
    num_procs: int
    arrivals: Arrivals
    rate_per_s: float | None
    duration_s: float
    drain_s: float
    slo_mix: tuple[SloShare, ...]
    max_new_tokens: int
    gamma: int
    draft: str
    seed: int
    faults: tuple[Fault, ...] = ()
    mode: Mode = "distributed"
    max_queued: int | None = None
    sampling: SamplingParams | None = None
    """Every request's sampling, its length aside (``None``: greedy): :attr:`request_sampling`."""

    @property
    def request_sampling(self) -> SamplingParams:
        """What each request samples with: :attr:`sampling` (greedy when ``None``),
        ``max_new_tokens`` tokens."""
        return dataclasses.replace(self.sampling or SamplingParams(),
                                   max_new_tokens=self.max_new_tokens)  # fmt: skip

    def __post_init__(self) -> None:
        _positive("--clients", self.num_clients)
        if self.num_clients > MAX_CLIENTS:
            raise UserInputError(f"--clients must be ≤ {MAX_CLIENTS:,}, got {self.num_clients}")
        if not 1 <= self.num_procs <= self.num_clients:
            raise UserInputError(
                f"--procs must be in 1..--clients ({self.num_clients}), got {self.num_procs}"
            )
        if self.arrivals == "poisson":
            if self.rate_per_s is None:
                raise UserInputError("--arrivals poisson needs --rate (arrivals per second)")
            if not (self.rate_per_s > 0 and math.isfinite(self.rate_per_s)):
                raise UserInputError(f"--arrivals poisson needs --rate > 0, got {self.rate_per_s}")
            if self.max_queued is None or self.max_queued < 1:
                raise UserInputError(f"--max-queued must be ≥ 1, got {self.max_queued}")
        elif self.rate_per_s is not None:
            raise UserInputError("--rate applies to --arrivals poisson only")
        elif self.max_queued is not None:
            raise UserInputError("--max-queued applies to --arrivals poisson only")
        for name, value in (("--duration-s", self.duration_s), ("--drain-s", self.drain_s)):
            if not (value > 0 and math.isfinite(value)):
                raise UserInputError(f"{name} must be a number > 0, got {value}")
        _positive("--max-new-tokens", self.max_new_tokens)
        _positive("--gamma", self.gamma)
        for fault in self.faults:
            if fault.at_s >= self.duration_s:
                raise UserInputError(
                    f"--faults: {fault.kind}@{fault.at_s:g} is not before the end of the "
                    f"run (--duration-s {self.duration_s:g})"
                )
            if fault.kind == "kill-clients" and fault.count > self.num_procs:
                raise UserInputError(
                    f"--faults: kill-clients@{fault.at_s:g}:{fault.count} kills more client "
                    f"processes than --procs {self.num_procs}"
                )


def parse_modes(text: str) -> tuple[Mode, ...]:
    """``--mode``: one of :data:`MODES`, or several comma-separated (run one after another
    against the same server)."""
    modes = tuple(x.strip() for x in text.split(",") if x.strip())
    bad = [m for m in modes if m not in MODES]
    if bad or not modes or len(set(modes)) != len(modes):
        raise UserInputError(
            f"--mode expects distinct items of {', '.join(MODES)}, comma-separated; got {text!r}"
        )
    return modes  # type: ignore[return-value]


def _positive(flag: str, value: int) -> None:
    if value < 1:
        raise UserInputError(f"{flag} must be ≥ 1, got {value}")


def parse_slo_mix(text: str) -> tuple[SloShare, ...]:
    """``NAME:TARGET:SHARE,...`` (TARGET tokens/s or ``none``; shares are normalised)."""
    shares: list[SloShare] = []
    for item in (x.strip() for x in text.split(",") if x.strip()):
        parts = [part.strip() for part in item.split(":")]
        if len(parts) != 3 or not parts[0]:
            raise UserInputError(
                f"--slo-mix expects NAME:TOKENS_PER_S:SHARE items (TOKENS_PER_S a number or "
                f"none), got {item!r}"
            )
        name, target_text, share_text = parts
        try:
            target = None if target_text.lower() == "none" else float(target_text)
            share = float(share_text)
        except ValueError:
            raise UserInputError(f"--slo-mix: {item!r} has a value that is not a number") from None
        if target is not None and not (target > 0 and math.isfinite(target)):
            raise UserInputError(f"--slo-mix: {name}'s target must be > 0 or none, got {target}")
        if not (share > 0 and math.isfinite(share)):
            raise UserInputError(f"--slo-mix: {name}'s share must be > 0, got {share}")
        if any(s.name == name for s in shares):
            raise UserInputError(f"--slo-mix names the class {name!r} twice")
        shares.append(SloShare(name, target, share))
    if not shares:
        raise UserInputError("--slo-mix needs at least one NAME:TOKENS_PER_S:SHARE item")
    total = sum(s.share for s in shares)
    return tuple(SloShare(s.name, s.target_tokens_per_s, s.share / total) for s in shares)


def check_own_server_classes(mix: tuple[SloShare, ...]) -> None:
    """The bench's own server is given each class as ``--slo-class NAME=TOKENS_PER_S``: a
    name with ``=`` or ``.`` cannot be written so."""
    for s in mix:
        if "=" in s.name or "." in s.name:
            raise UserInputError(
                f"--slo-mix: class name {s.name!r} has a '=' or '.', which the bench's own "
                f"server's --slo-class cannot take"
            )


def parse_faults(text: str) -> tuple[Fault, ...]:
    """``KIND@SECONDS[:COUNT],...`` with KIND ``kill-clients`` or ``restart-server``, in
    time order."""
    faults: list[Fault] = []
    for item in (x.strip() for x in text.split(",") if x.strip()):
        kind, sep, when = item.partition("@")
        if not sep or kind not in FAULT_KINDS:
            raise UserInputError(
                f"--faults expects KIND@SECONDS[:COUNT] items, KIND one of "
                f"{', '.join(FAULT_KINDS)}; got {item!r}"
            )
        at_text, colon, count_text = when.partition(":")
        try:
            at_s = float(at_text)
            count = int(count_text) if count_text or colon else 1  # "@2:": no count is none
        except ValueError:
            raise UserInputError(
                f"--faults: {item!r} has a time or count that is not a number"
            ) from None
        if not (at_s > 0 and math.isfinite(at_s)) or count < 1:
            raise UserInputError(f"--faults: {item!r} needs a time > 0 and a count ≥ 1")
        if kind == "restart-server" and colon:
            raise UserInputError(f"--faults: {item!r}: restart-server takes no count")
        faults.append(Fault(kind, at_s, count))  # type: ignore[arg-type]
    return tuple(sorted(faults, key=lambda f: f.at_s))
