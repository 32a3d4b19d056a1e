"""The MBS's verification schedule (Zhu et al., seed 001, Eqs. 17–18), two ways.

* :class:`PlanOrderVerifier` — the paper: a batch's drafted blocks are verified together
  in one pass of Eq. 18 (b·F^v_{n,m}, blocks padded to the longest), batches in the order
  their drafts finish (FIFO; the plan's order under the step barrier).
* :class:`PolicyVerifier` — composition (issue item 7): each session's drafted block is a
  :class:`edgespec.core.types.PendingVerification`; a registered batching policy
  (``fcfs``, ``lab``, ``wisp``: :meth:`BatchingPolicy.select`) picks the queued blocks of
  the next pass, which may mix batches and steps; the pass takes Eq. 17 over the chosen
  blocks, c^v_1·Σ F^v + c^v_2, each block's F^v by Eq. 14 at its own batch's I_m and
  step. The policy sees the cached tokens rounded to integers (L is fractional). Its
  answer is checked as the server and :mod:`edgespec.sim.loop` check it
  (:func:`~edgespec.policies.contracts.decide_batch`: queued ids, each once, within
  ``max_batch_size``, ``max_batch_tokens`` and ``max_context_tokens``; a
  :class:`~edgespec.policies.contracts.PolicyContractError` otherwise).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from edgespec.core.types import PendingVerification
from edgespec.policies.contracts import decide_batch
from edgespec.policies.interfaces import BatchingPolicy, BatchLimits
from edgespec.sim.drafting_server.stages import StageClock


@dataclass(frozen=True, slots=True)
class DraftBlock:
    """One task's drafted block at its batch's step ``step``: ``num_sent`` draft tokens
    over a prompt padded to ``input_len`` (I_m); ``deadline_s``: its verification's
    deadline under an SLO (``None``: none)."""

    entry_id: int
    task: int
    batch: int
    step: int
    input_len: int
    num_sent: int
    enqueued_s: float
    deadline_s: float | None = None


@dataclass(frozen=True, slots=True)
class VerifyPass:
    """The blocks one verification pass holds and its duration in seconds."""

    blocks: tuple[DraftBlock, ...]
    duration_s: float


class Verifier(Protocol):
    """The MBS's queue: blocks in when a batch's draft ends, passes out when it is free."""

    name: str

    def enqueue(self, blocks: Sequence[DraftBlock]) -> None:
        """One drafted batch's blocks (one per task of the batch)."""
        ...

    def next_pass(self, now_s: float, force: bool) -> VerifyPass | None:
        """The next pass to start at ``now_s``, or ``None`` to wait (``force``: nothing
        more can be enqueued before the MBS acts, so waiting is not allowed)."""
        ...

    def __len__(self) -> int: ...


@dataclass(slots=True)
class PlanOrderVerifier:
    """Eq. 18: one pass per drafted batch, first drafted first verified."""

    clock: StageClock
    name: str = "plan order"
    _groups: deque[tuple[DraftBlock, ...]] = field(default_factory=deque, init=False)

    def enqueue(self, blocks: Sequence[DraftBlock]) -> None:
        if blocks:
            self._groups.append(tuple(blocks))

    def next_pass(self, now_s: float, force: bool) -> VerifyPass | None:
        if not self._groups:
            return None
        group = self._groups.popleft()
        head = group[0]
        padded = max(b.num_sent for b in group)
        duration = self.clock.batch_verify_s(head.input_len, head.step, len(group), padded)
        return VerifyPass(group, duration)

    def __len__(self) -> int:
        return sum(len(g) for g in self._groups)


@dataclass(slots=True)
class PolicyVerifier:
    """A batching policy over per-session blocks; passes by Eq. 17 (module docstring).
    ``acceptance_rate`` gives the policy's N̂ᵛ = α·(draft tokens) per block: the model's α,
    known here, where the server and :mod:`edgespec.sim.loop`, which know no α, estimate
    it per session (:func:`~edgespec.policies.slo.acceptance_estimate`)."""

    clock: StageClock
    policy: BatchingPolicy
    limits: BatchLimits
    acceptance_rate: float
    name: str = "policy"
    _blocks: dict[int, DraftBlock] = field(default_factory=dict, init=False)
    _pending: dict[int, PendingVerification] = field(default_factory=dict, init=False)

    def enqueue(self, blocks: Sequence[DraftBlock]) -> None:
        for block in blocks:
            self._blocks[block.entry_id] = block
            self._pending[block.entry_id] = self._pending_of(block)

    def _pending_of(self, block: DraftBlock) -> PendingVerification:
        if block.step == 1:
            new, cached = block.input_len + block.num_sent, 0
        else:
            new = 1 + block.num_sent
            steps_done = block.step - 1.0
            cached = round(block.input_len + steps_done * self.clock.tokens_per_step - 1.0)
        return PendingVerification(
            entry_id=block.entry_id,
            session_id=f"task-{block.task}",
            client_id=str(block.task),
            enqueued_s=block.enqueued_s,
            num_draft_tokens=block.num_sent,
            num_new_tokens=new,
            num_cached_tokens=cached,
            deadline_s=block.deadline_s,
            expected_accepted=self.acceptance_rate * block.num_sent,
        )

    def next_pass(self, now_s: float, force: bool) -> VerifyPass | None:
        if not self._pending:
            return None
        queue = tuple(self._pending.values())
        limits = replace(self.limits, force=force)
        chosen = decide_batch(self.policy, queue, now_s, limits, self._pending)
        if not chosen:
            return None
        blocks = tuple(self._blocks.pop(i) for i in chosen)
        for i in chosen:
            del self._pending[i]
        flops = sum(self.clock.verify_flops(b.input_len, b.step, b.num_sent) for b in blocks)
        return VerifyPass(blocks, self.clock.pass_s(flops))

    def __len__(self) -> int:
        return len(self._pending)
