"""A chain cut short by the stop predictor (WISP §4.1): the round sends the kept prefix of
its window and runs the passes :class:`~edgespec.sim.model.stop_model.StopModel` says,
paying the predictor's cost per pass; the confusion stand-in draws the round's acceptance
as it drafts, and the verdict uses that draw."""

from __future__ import annotations

from edgespec.sim.blocks.chain import ChainBlock
from edgespec.sim.model.acceptance import AcceptanceModel
from edgespec.sim.model.device_round import DraftTimes
from edgespec.sim.model.entities import Session
from edgespec.sim.model.stop_model import StopModel


class StopCutBlock(ChainBlock):
    """A stop-predictor-cut chain (module docstring)."""

    __slots__ = ("stop",)

    def __init__(
        self,
        acceptance: AcceptanceModel,
        draft_times: DraftTimes,
        fixed_rounds: bool,
        stop: StopModel,
    ) -> None:
        super().__init__(acceptance, draft_times, fixed_rounds, "stop-cut")
        self.stop = stop

    def draft(self, s: Session, gamma: int, first: bool) -> float:
        stop = self.stop
        passes, early = gamma, None
        if gamma:
            cut = stop.block(
                s.request.request_id, s.seq, s.committed, gamma, self.acceptance, s.device.rng
            )
            gamma = cut.sent
            passes, early = cut.passes, cut.accepted
        s.sent = s.gamma_eff = gamma
        s.passes, s.pre_accepted = passes, early
        return self.draft_times.round_s(s, passes, first, stop.overhead_s)

    def judge(self, s: Session) -> tuple[int, int, int]:
        early = s.pre_accepted  # drawn with the predictor's decisions (None: fused, replay)
        if early is not None:
            return early, self.commit(s, early), 0
        return ChainBlock.judge(self, s)
