"""A :class:`~edgespec.sweeps.executor.SweepExecutor` on Ray: a local Ray (started
here with ``workers`` CPUs, no dashboard, quiet logging) or an existing cluster
(``address``: ``"auto"``, ``"host:port"`` or ``"ray://host:10001"``). A ``host:port``
address is first tried with a TCP connect (:func:`check_address`, up to
:data:`CONNECT_TIMEOUT_S`): ``ray.init`` itself waits on an address that does not answer
without end.

Ray is imported only when a map runs, so ``import edgespec`` stays light; it is pinned in
the ``learn`` extra. The executor shuts down only a Ray it started itself: inside a
process that already called ``ray.init`` (a test fixture, a notebook) it reuses that
session and leaves it running.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import socket
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from edgespec.errors import MissingPackageError, UserInputError

CONNECT_TIMEOUT_S = 5.0
"""How long :func:`check_address` waits for a cluster's ``host:port`` to accept."""


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


def check_address(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Refuse a Ray ``address`` whose ``host:port`` (after an optional ``ray://``) does not
    accept a TCP connection within ``timeout_s``, or that has no ``host:port``; ``auto`` and
    ``local`` are Ray's to resolve. One line naming ``--address``."""
    if address in ("auto", "local"):
        return
    host, _, port_text = address.removeprefix("ray://").rpartition(":")
    host = host.removeprefix("[").removesuffix("]")  # [::1]:6379
    if not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise UserInputError(f"--address {address}: expected host:port, ray://host:port or auto")
    try:
        socket.create_connection((host, int(port_text)), timeout=timeout_s).close()
    except OSError as exc:
        reason = "no answer" if isinstance(exc, TimeoutError) else exc.strerror or str(exc)
        raise UserInputError(
            f"--address {address}: no Ray cluster reachable there ({reason} within "
            f"{timeout_s:g} s); start one (ray start --head) or leave --address out "
            "for a local Ray"
        ) from exc


def _call(fn: Callable[[Any], Any], item: Any) -> Any:
    return fn(item)


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
        if self.address is None:
            start_local_ray(ray, cpus, **options)
        else:
            check_address(self.address)
            ray.init(address=self.address, **options)
        return True

    def map_unordered(
        self, fn: Callable[[Any], Any], items: Sequence[Any]
    ) -> Iterator[tuple[int, Any]]:
        ray = _ray()
        started = self._start(ray, max(1, min(self.workers, len(items))))
        try:
            remote = ray.remote(num_cpus=1)(_call)
            fn_ref = ray.put(fn)
            pending: dict[Any, int] = {}
            next_index = 0
            while next_index < len(items) or pending:
                while next_index < len(items) and len(pending) < self.workers:
                    pending[remote.remote(fn_ref, items[next_index])] = next_index
                    next_index += 1
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    yield pending.pop(ref), ray.get(ref)
        finally:
            if started:
                ray.shutdown()
