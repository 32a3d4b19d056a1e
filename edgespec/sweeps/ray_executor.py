"""A :class:`~edgespec.sweeps.executor.SweepExecutor` on Ray: a local Ray (started
here with ``workers`` CPUs, no dashboard, quiet logging) or an existing cluster
(``address``: ``"auto"``, ``"host:port"`` or ``"ray://host:10001"``). A ``host:port``
address is first tried with a TCP connect and a gRPC (HTTP/2) handshake, all within
:data:`CONNECT_TIMEOUT_S` (:func:`check_address`): ``ray.init`` itself retries without end
on an address that does not answer, or that answers but is no Ray cluster (a web server);
an error ``ray.init`` then raises is one line naming the address.

A task's error reaches the caller as the task raised it (Ray's ``RayTaskError``, whose text
is the worker's whole traceback, unwrapped to its cause), so a config error in a worker is
the one line a serial run prints. Ray's workers import edgespec afresh: a policy that this
process registered by assignment is not theirs, and a run naming it fails there with an
unknown policy; that error then says so (:func:`_call`).

Ray is imported only when a map runs, so ``import edgespec`` stays light; it is pinned in
the ``learn`` extra. The executor shuts down only a Ray it started itself: inside a
process that already called ``ray.init`` (a test fixture, a notebook) it reuses that
session and leaves it running. The SIGINT and SIGTERM handlers ``ray.init`` replaces are
put back (:func:`~edgespec.sweeps.stops.kept_stop_handlers`), so a command stopped by
either says so in one line.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import socket
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from edgespec.config import ConfigError
from edgespec.errors import MissingPackageError, UserInputError
from edgespec.sweeps.stops import WorkerDied, kept_stop_handlers, sigterm_interrupts

CONNECT_TIMEOUT_S = 5.0
"""How long :func:`check_address` waits for a cluster's ``host:port`` to accept and answer
the gRPC handshake, both together."""
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes.fromhex("000000040000000000")
"""An HTTP/2 client's connection preface and an empty SETTINGS frame: a gRPC server (Ray's
GCS, its client server on 10001) answers with a SETTINGS frame of its own."""
FRAME_HEADER_BYTES = 9
SETTINGS_FRAME = 4
"""An HTTP/2 frame's header size, and the type byte (its fourth) of a SETTINGS frame."""
MAX_REASON_CHARS = 300
"""How much of the first line of ``ray.init``'s error a refusal quotes."""


def _ray() -> Any:
    try:
        ray = importlib.import_module("ray")  # lazily: ``import edgespec`` stays light
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingPackageError(
            "the Ray engine needs ray: pip install 'edgespec[learn]' (it pins ray)"
        ) from exc
    return ray


GCS_START_FAILED = "Failed to start GCS"
NODE_START_TIMED_OUT = "The current node timed out during startup"
"""Ray's own words when its processes did not come up within its 30 s (a loaded machine)."""


def start_local_ray(ray: Any, num_cpus: int, **options: Any) -> None:
    """``ray.init`` of a local Ray with ``num_cpus`` CPUs, tried once more when its GCS exits
    at start (Ray picks the GCS port by binding port 0 and letting it go, so another socket
    can take it before the GCS binds it) or its node does not come up within Ray's startup
    timeout (seen on a 2-core machine under load); any other failure, or a second one, is
    raised. Before the second try, the processes the first one started are ended: a failed
    ``ray.init`` keeps no handle on them, so ``ray.shutdown`` leaves them running."""
    before = _child_pids()
    try:
        ray.init(num_cpus=num_cpus, **options)
    except Exception as exc:  # Ray raises a plain Exception for the startup timeout
        if not str(exc).startswith((GCS_START_FAILED, NODE_START_TIMED_OUT)):
            raise
        ray.shutdown()
        _end_children_since(before)
        ray.init(num_cpus=num_cpus, **options)


def _child_pids() -> set[int]:
    import psutil

    return {child.pid for child in psutil.Process().children(recursive=True)}


def _end_children_since(before: set[int]) -> None:
    """SIGKILL this process's descendants that are not in ``before``; wait up to 10 s."""
    import psutil

    started = [c for c in psutil.Process().children(recursive=True) if c.pid not in before]
    for child in started:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()
    psutil.wait_procs(started, timeout=10.0)


def check_address(
    address: str,
    timeout_s: float = CONNECT_TIMEOUT_S,
    *,
    tls: bool = False,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Refuse a Ray ``address`` whose ``host:port`` (after an optional ``ray://``) does not
    accept a TCP connection, or does not answer a gRPC handshake as Ray does, within
    ``timeout_s`` in all (``tls``: a cluster with ``RAY_USE_TLS``, whose handshake is TLS,
    gets the connect alone), or that has no ``host:port``; ``auto`` and ``local`` are
    Ray's to resolve. One line naming ``--address``."""
    if address in ("auto", "local"):
        return
    host, _, port_text = address.removeprefix("ray://").rpartition(":")
    host = host.removeprefix("[").removesuffix("]")  # [::1]:6379
    if not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise UserInputError(f"--address {address}: expected host:port, ray://host:port or auto")
    deadline = clock() + timeout_s
    try:
        sock = socket.create_connection((host, int(port_text)), timeout=timeout_s)
    except OSError as exc:
        reason = "no answer" if isinstance(exc, TimeoutError) else exc.strerror or str(exc)
        raise UserInputError(
            f"--address {address}: no Ray cluster reachable there ({reason} within "
            f"{timeout_s:g} s); start one (ray start --head) or leave --address out "
            "for a local Ray"
        ) from exc
    with sock:
        problem = None if tls else _grpc_problem(sock, lambda: deadline - clock(), timeout_s)
    if problem is not None:
        raise UserInputError(
            f"--address {address}: not a Ray cluster ({problem}); start one (ray start "
            "--head) or leave --address out for a local Ray"
        )


def _grpc_problem(sock: socket.socket, left_s: Callable[[], float], timeout_s: float) -> str | None:
    """Why the server on ``sock`` is no gRPC server, ``None`` when it answers the HTTP/2
    preface with a SETTINGS frame before ``left_s()`` runs out (its first 9 bytes read)."""
    reply = b""
    try:
        sock.settimeout(max(left_s(), 1e-3))
        sock.sendall(HTTP2_PREFACE)
        while len(reply) < FRAME_HEADER_BYTES:
            sock.settimeout(max(left_s(), 1e-3))
            chunk = sock.recv(FRAME_HEADER_BYTES - len(reply))
            if not chunk:
                after = f", after {reply!r}" if reply else ""
                return f"it closed the connection at a gRPC (HTTP/2) handshake{after}"
            reply += chunk
    except TimeoutError:
        return f"no answer to a gRPC (HTTP/2) handshake within {timeout_s:g} s"
    except OSError as exc:
        return f"a gRPC (HTTP/2) handshake failed: {exc.strerror or exc}"
    if reply[3] != SETTINGS_FRAME:
        return (
            f"it answered {reply!r} to a gRPC (HTTP/2) handshake; Ray's GCS answers with a "
            "SETTINGS frame"
        )
    return None


def tls_asked(environ: Mapping[str, str]) -> bool:
    """Whether ``environ`` asks Ray for TLS (``RAY_USE_TLS`` 1 or true, as Ray reads it)."""
    return environ.get("RAY_USE_TLS", "0").lower() in ("1", "true")


def _joined(ray: Any, address: str, options: Mapping[str, Any]) -> None:
    """``ray.init`` at a cluster's ``address``; its connection error as one line."""
    try:
        ray.init(address=address, **options)
    except (OSError, RuntimeError) as exc:  # ConnectionError, "Failed to connect to GCS"
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if len(first) > MAX_REASON_CHARS:
            first = first[:MAX_REASON_CHARS] + "..."
        raise UserInputError(
            f"--address {address}: Ray could not join the cluster: {first}"
        ) from None


def registered_policies() -> frozenset[tuple[str, str]]:
    """Every (kind, name) of this process's policy registry
    (:data:`edgespec.policies.registry.KINDS`)."""
    from edgespec.policies.registry import KINDS

    return frozenset((kind, name) for kind, names in KINDS.items() for name in names)


def _call(fn: Callable[[Any], Any], item: Any, driver_policies: frozenset[tuple[str, str]]) -> Any:
    """``fn(item)`` in a Ray worker. An error that an unknown policy caused, where the
    driver's registry (``driver_policies``) has policies this worker's lacks, says which
    and what to do: ``...; known: ['awc', 'dynamic', 'static'] (window policy 'mine' is
    registered in the driver only: ...)``."""
    try:
        return fn(item)
    except UserInputError as exc:
        missing = sorted(driver_policies - registered_policies())
        if not missing or not _caused_by_unknown_policy(exc):
            raise
        names = ", ".join(f"{kind} policy {name!r}" for kind, name in missing)
        hint = (
            f" ({names} {'is' if len(missing) == 1 else 'are'} registered in the driver only: "
            "Ray's workers import edgespec's policy registry afresh; add it to "
            "edgespec/policies/registry.py, or run with --engine local)"
        )
        if type(exc) is ConfigError:
            raise ConfigError(exc.path, exc.message + hint) from exc
        raise UserInputError(f"{exc}{hint}") from exc


def _caused_by_unknown_policy(exc: BaseException) -> bool:
    from edgespec.policies.registry import UnknownPolicyError

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, UnknownPolicyError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _result(ray: Any, ref: Any, index: int) -> Any:
    """``ray.get(ref)``, item ``index``'s; a task's error raised as the task raised it (the
    module docstring), from Ray's, whose text keeps the worker's traceback; a worker that
    died under it (killed: out of memory) :class:`~.stops.WorkerDied`."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        raise exc.cause from exc
    except ray.exceptions.WorkerCrashedError:
        raise WorkerDied(index) from None


@dataclass(frozen=True, slots=True)
class RaySweepExecutor:
    """Runs each item as one Ray task (one CPU each); yields results as tasks finish.

    ``address=None``: a local Ray with ``workers`` CPUs, or fewer when there are fewer
    items (so at most ``workers`` tasks run at once); otherwise ``ray.init(address=...)``
    joins that cluster (:func:`check_address` first), and ``workers`` caps the tasks in
    flight from this driver.
    """

    address: str | None = None
    workers: int = 2

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")

    def _start(self, ray: Any, cpus: int) -> bool:
        """Connect (or start, with ``cpus`` CPUs) Ray; ``True`` when this call started the
        session."""
        if ray.is_initialized():
            return False
        options: dict[str, Any] = {
            "include_dashboard": False,
            "logging_level": logging.WARNING,
            "log_to_driver": False,
            "configure_logging": True,
        }
        with kept_stop_handlers():
            if self.address is None:
                start_local_ray(ray, cpus, **options)
            else:
                check_address(self.address, tls=tls_asked(os.environ))
                _joined(ray, self.address, options)
        return True

    def map_unordered(
        self, fn: Callable[[Any], Any], items: Sequence[Any]
    ) -> Iterator[tuple[int, Any]]:
        ray = _ray()
        started = self._start(ray, max(1, min(self.workers, len(items))))
        try:
            remote = ray.remote(num_cpus=1)(_call)
            fn_ref, policies_ref = ray.put(fn), ray.put(registered_policies())
            pending: dict[Any, int] = {}
            next_index = 0
            while next_index < len(items) or pending:
                while next_index < len(items) and len(pending) < self.workers:
                    task = remote.remote(fn_ref, items[next_index], policies_ref)
                    pending[task] = next_index
                    next_index += 1
                with sigterm_interrupts():  # Ray's wait drops any other exception
                    done, _ = ray.wait(list(pending), num_returns=1)
                    indices = [pending.pop(ref) for ref in done]
                    results = [
                        (i, _result(ray, ref, i)) for i, ref in zip(indices, done, strict=True)
                    ]
                yield from results
        finally:
            if started:
                ray.shutdown()
