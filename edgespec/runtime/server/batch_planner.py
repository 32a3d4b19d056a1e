"""The scheduler's batch plans (:class:`~edgespec.runtime.server.service.VerificationService`):
the batching policy's choice over the whole queue under the server's limits, checked by
the shared contract (:func:`edgespec.policies.contracts.decide_batch`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from edgespec.core.types import PendingVerification
from edgespec.policies.contracts import decide_batch
from edgespec.policies.interfaces import BatchingPolicy, BatchLimits
from edgespec.runtime.server.config import ServerConfig


class BatchPlanner:
    """``batching`` under ``config``'s batch and KV limits, asked at ``clock()``."""

    def __init__(
        self, batching: BatchingPolicy, config: ServerConfig, clock: Callable[[], float]
    ) -> None:
        self._policy = batching
        self._config = config
        self._clock = clock

    def limits(self, force: bool) -> BatchLimits:
        return BatchLimits(
            max_batch_size=self._config.max_batch_size,
            max_batch_tokens=self._config.max_batch_tokens,
            max_context_tokens=self._config.kv_budget_tokens,
            force=force,
        )

    def plan(self, queue: Sequence[PendingVerification], force: bool) -> tuple[int, ...]:
        """The entry ids of the next batch from ``queue``. A policy that raises or breaks
        its contract is a :class:`PolicyContractError` naming the policy."""
        return decide_batch(self._policy, tuple(queue), self._clock(), self.limits(force))
