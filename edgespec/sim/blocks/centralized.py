"""Centralized rounds (``mode: centralized``): the device drafts nothing and asks no window;
its first round sends the prompt, later rounds send nothing, and each round the target
decodes one token."""

from __future__ import annotations

from edgespec.core.link_delay import DraftRows
from edgespec.sim.blocks.chain import ChainBlock, sent_up_s
from edgespec.sim.model.acceptance import AcceptanceModel
from edgespec.sim.model.device_round import DraftTimes
from edgespec.sim.model.entities import Session
from edgespec.sim.model.network import uplink_bytes


class CentralizedBlock(ChainBlock):
    """A centralized round (module docstring). ``metered``: a stop predictor is configured,
    so the round records its 0 draft passes."""

    __slots__ = ("metered",)

    drafts = False

    def __init__(
        self,
        acceptance: AcceptanceModel,
        draft_times: DraftTimes,
        fixed_rounds: bool,
        metered: bool,
    ) -> None:
        super().__init__(acceptance, draft_times, fixed_rounds, "centralized")
        self.metered = metered

    def draft(self, s: Session, gamma: int, first: bool) -> float:
        s.sent = s.gamma_eff = 0
        if self.metered:
            s.passes, s.pre_accepted = 0, None
        return 0.0

    def uplink_s(self, s: Session, first: bool, draft_rows: DraftRows | None) -> float:
        if not first:
            s.round_up_s = 0.0
            return 0.0
        size = uplink_bytes(0, s.request.num_prompt_tokens, s.device.vocab_size, None)
        return sent_up_s(s, size)

    def judge(self, s: Session) -> tuple[int, int, int]:
        return 0, self.commit(s, 0), 0
