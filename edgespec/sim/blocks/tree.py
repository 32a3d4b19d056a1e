"""Token-tree replay: a request captured with token trees (greedy or sampled) replays its
rounds as captured, the round's nodes sent (with a parent each, and no draft rows: they are
proposed for certain) and drafted in one pass per depth (the captured passes), the captured
number accepted. Rounds past the captured ones, and fused rounds, are a chain's."""

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
        rounds = s.tree
        assert rounds is not None, "SessionBlocks gives tree blocks to tree sessions"
        sent = gamma
        if gamma and s.num_rounds < len(rounds):
            sent, _, gamma = rounds[s.num_rounds]  # the captured round: nodes and depth
        s.sent = sent
        s.gamma_eff = gamma
        s.passes, s.pre_accepted = gamma, None  # one pass per depth (a chain's: per token)
        return self.draft_times.round_s(s, gamma, first, self.overhead_s)

    def uplink_s(self, s: Session, first: bool, draft_rows: DraftRows | None) -> float:
        """A captured round's nodes with a parent each and no draft rows (sampled too: a
        tree's nodes are proposed for certain); a round past them, a chain's."""
        rounds = s.tree
        assert rounds is not None
        if s.num_rounds >= len(rounds):
            return ChainBlock.uplink_s(self, s, first, draft_rows)
        prompt_ids = s.request.num_prompt_tokens if first else 0
        size = uplink_bytes(s.sent, prompt_ids, s.device.vocab_size, None, 0, True)
        return sent_up_s(s, size)

    def judge(self, s: Session) -> tuple[int, int, int]:
        rounds = s.tree
        assert rounds is not None
        if s.gamma_eff and s.num_rounds < len(rounds) and not s.fused:
            num_acc = rounds[s.num_rounds][1]  # as captured
            return num_acc, self.commit(s, num_acc), 0
        return ChainBlock.judge(self, s)
