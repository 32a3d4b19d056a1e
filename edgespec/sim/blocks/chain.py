"""The plain chain: γ drafted tokens sent as one block, verified greedily (or by rejection
sampling), the acceptance model drawing how many the target accepts; the round commits
those and the target's own next token. Its steps are shared by the other kinds
(:mod:`edgespec.sim.blocks`), which override what differs."""

from __future__ import annotations

from collections.abc import Callable

from edgespec.core.link_delay import DraftRows
from edgespec.sim.model.acceptance import AcceptanceModel
from edgespec.sim.model.device_round import DraftTimes
from edgespec.sim.model.entities import Session
from edgespec.sim.model.network import uplink_bytes

Commit = Callable[[Session, int], int]
"""Tokens a round commits, given its accepted count (before ``s.committed`` moves)."""


def with_bonus(s: Session, num_acc: int) -> int:
    """The accepted drafts and the target's next token, capped to the output left."""
    left = s.request.num_output_tokens - s.committed
    return num_acc + 1 if num_acc + 1 < left else left


def fixed_round(s: Session, num_acc: int) -> int:
    """DSD-Sim's ``fixed_rounds``: what the round drafted (at least 1), capped likewise."""
    left = s.request.num_output_tokens - s.committed
    return min(max(s.sent, 1), left)


def sent_up_s(s: Session, size: int) -> float:
    """The uplink latency of ``size`` bytes from ``s``'s device, drawn from its stream and
    kept in ``s.round_up_s`` and ``s.network_s``."""
    dev = s.device
    up = dev.link.uplink_latency_s(size, dev.rng)
    s.round_up_s = up
    s.network_s += up
    return up


class ChainBlock:
    """The plain chain (module docstring). ``fixed_rounds``: DSD-Sim's commit rule."""

    __slots__ = ("acceptance", "accepted", "commit", "draft_times", "kind")

    drafts = True

    def __init__(
        self,
        acceptance: AcceptanceModel,
        draft_times: DraftTimes,
        fixed_rounds: bool = False,
        kind: str = "chain",
    ) -> None:
        self.acceptance = acceptance
        self.accepted = acceptance.accepted
        self.draft_times = draft_times
        self.commit: Commit = fixed_round if fixed_rounds else with_bonus
        self.kind = f"fixed-round {kind}" if fixed_rounds else kind

    def draft(self, s: Session, gamma: int, first: bool) -> float:
        """γ tokens drafted and sent: γ draft passes."""
        s.sent = s.gamma_eff = gamma
        return self.draft_times.round_s(s, gamma, first, None)

    def uplink_s(self, s: Session, first: bool, draft_rows: DraftRows | None) -> float:
        """The drafted ids (the prompt's too on the first round), their distributions
        as ``draft_rows`` sends them (``None``: none)."""
        dev = s.device
        prompt_ids = s.request.num_prompt_tokens if first else 0
        return sent_up_s(s, uplink_bytes(s.sent, prompt_ids, dev.vocab_size, draft_rows))

    def judge(self, s: Session) -> tuple[int, int, int]:
        """The acceptance model's draw over the round's ``gamma_eff`` positions."""
        gamma = s.gamma_eff
        num_acc = self.accepted(s.seq, s.committed, gamma, s.device.rng) if gamma > 0 else 0
        return num_acc, self.commit(s, num_acc), 0

    def extra_hops_s(self, s: Session, size: int) -> float:
        """None: the verdict goes straight down."""
        return 0.0
