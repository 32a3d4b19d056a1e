"""Fixtures: tiny target/draft models and loopback gRPC servers on ephemeral ports."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("grpc")

from edgespec.config import from_dict  # noqa: E402
from edgespec.policies.interfaces import BatchingPolicy, WindowPolicy  # noqa: E402
from edgespec.runtime.backends.base import DraftBackend  # noqa: E402
from edgespec.runtime.backends.transformers_backend import TransformersTarget  # noqa: E402
from edgespec.runtime.backends.transformers_draft import TransformersDraft  # noqa: E402
from edgespec.runtime.server.batching import build_batching  # noqa: E402
from edgespec.runtime.server.config import ServerConfig  # noqa: E402
from edgespec.runtime.server.engine import VerificationEngine  # noqa: E402
from edgespec.runtime.server.round_log import RoundLog  # noqa: E402
from edgespec.runtime.server.service import VerificationService  # noqa: E402
from edgespec.runtime.server.verification import EXACT_RULES, AnyRule  # noqa: E402
from edgespec.runtime.testing import noisy_copy, tiny_llama  # noqa: E402
from edgespec.runtime.wire.server_thread import ServerThread  # noqa: E402
from tests.runtime.device import on_test_device  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def target_model() -> Any:
    return on_test_device(tiny_llama(seed=0))  # EDGESPEC_TEST_DEVICE, default cpu


@pytest.fixture(scope="session")
def target(target_model: Any) -> TransformersTarget:
    return TransformersTarget(target_model)


@pytest.fixture(scope="session")
def draft_model(target_model: Any) -> Any:
    return noisy_copy(target_model, noise=0.2, seed=1)


@pytest.fixture
def draft(draft_model: Any) -> TransformersDraft:
    return TransformersDraft(draft_model)


ServerFactory = Callable[..., ServerThread]


def start_server(
    backend: TransformersTarget,
    draft_factory: Callable[[], DraftBackend] | None = None,
    port: int = 0,
    batching_policy: BatchingPolicy | None = None,
    rules: Mapping[str, AnyRule] = EXACT_RULES,
    window: WindowPolicy | None = None,
    log: Callable[[str], None] | None = None,
    round_log: RoundLog | None = None,
    **overrides: Any,
) -> ServerThread:
    """A loopback verification server for the ``backend`` target with config ``overrides`` (and
    ``batching_policy`` instead of the configured one, when given), serving ``rules``;
    ``window``: the server's window policy for fused runs; ``log`` and ``round_log``: where
    the service's event lines and round records go."""
    config = from_dict(ServerConfig, {"port": 0, **overrides})

    def build() -> VerificationService:
        engine = VerificationEngine(
            backend,
            config.kv_budget_tokens,
            config.max_sessions,
            rules=rules,
            prefix_cache=config.prefix_cache,
            prefill_part_tokens=config.prefill_part_tokens,
        )
        policy = batching_policy or build_batching(config.batching)
        return VerificationService(
            engine,
            config,
            policy,
            draft_factory=draft_factory,
            window=window,
            round_log=round_log,
            log=log,
        )

    return ServerThread(build, port=port).start()


@pytest.fixture
def make_server(target: TransformersTarget, draft_model: Any) -> Iterator[ServerFactory]:
    """Start servers with config overrides; all are stopped at teardown."""
    started: list[ServerThread] = []

    def make(port: int = 0, **overrides: Any) -> ServerThread:
        server = start_server(
            target, lambda: TransformersDraft(draft_model), port=port, **overrides
        )
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop(grace_s=0)


@pytest.fixture
def listener() -> Iterator[int]:
    """A plain socket listening on a free loopback port; its port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])
