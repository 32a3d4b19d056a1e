"""Token-tree replay: a request captured with token trees replays its rounds as captured,
the round's nodes sent (with a parent each) and drafted in one pass per depth, the
captured number accepted. Rounds past the captured ones, and fused rounds, are a chain's."""

from __future__ import annotations

from edgespec.core.link_delay import DraftRows
from edgespec.sim.blocks.chain import ChainBlock, sent_up_s
from edgespec.sim.model.acceptance import AcceptanceModel
from edgespec.sim.model.device_round import DraftTimes
from edgespec.sim.model.entities import Session
from edgespec.sim.model.network import uplink_bytes


class TreeBlock(ChainBlock):
    """Token-tree replay of ``s.tree`` (module docstring). ``overhead_s``: a stop
    predictor's cost per draft pass when the scenario has one (a tree is not cut; its
    passes are recorded)."""

    __slots__ = ("overhead_s",)

    def __init__(
        self,
        acceptance: AcceptanceModel,
        draft_times: DraftTimes,
        fixed_rounds: bool,
        overhead_s: float | None,
    ) -> None:
        super().__init__(acceptance, draft_times, fixed_rounds, "token-tree")
        self.overhead_s = overhead_s

    def draft(self, s: Session, gamma: int, first: bool) -> float:
        tree = s.tree
        assert tree is not None, "SessionBlocks gives tree blocks to tree sessions"
        rounds, depth = tree
        sent = gamma
        if gamma and s.num_rounds < len(rounds):
            sent = rounds[s.num_rounds][0]  # the captured round: its nodes are verified
            gamma = depth if sent else 0  # one draft pass per depth
        s.sent = sent
        s.gamma_eff = gamma
        overhead_s = self.overhead_s
        if overhead_s is not None:
            s.passes, s.pre_accepted = gamma, None
        return self.draft_times.round_s(s, gamma, first, overhead_s)

    def uplink_s(self, s: Session, first: bool, draft_rows: DraftRows | None) -> float:
        dev = s.device
        prompt_ids = s.request.num_prompt_tokens if first else 0
        size = uplink_bytes(s.sent, prompt_ids, dev.vocab_size, draft_rows, 0, True)
        return sent_up_s(s, size)

    def judge(self, s: Session) -> tuple[int, int, int]:
        tree = s.tree
        assert tree is not None
        rounds = tree[0]
        if s.gamma_eff and s.num_rounds < len(rounds) and not s.fused:
            num_acc = rounds[s.num_rounds][1]  # as captured
            return num_acc, self.commit(s, num_acc), 0
        return ChainBlock.judge(self, s)
