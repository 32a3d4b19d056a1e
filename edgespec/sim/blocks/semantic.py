"""A chain under semantic verification (WISV, :mod:`edgespec.sim.model.semantic`): each
mismatch goes to the device's decision head (:func:`~edgespec.sim.model.semantic.
semantic_round`); FH sends every drafted token's hidden state with the block, SH asks for
the mismatches' hidden states in a second hop before the verdict goes down
(:class:`~edgespec.sim.model.semantic.DeviceSemantics`)."""

from __future__ import annotations

from edgespec.core.link_delay import DraftRows
from edgespec.sim.blocks.chain import ChainBlock, sent_up_s
from edgespec.sim.model.acceptance import AcceptanceModel
from edgespec.sim.model.device_round import DraftTimes
from edgespec.sim.model.entities import Session
from edgespec.sim.model.network import uplink_bytes
from edgespec.sim.model.semantic import DeviceSemantics, semantic_round


def _semantics(s: Session) -> DeviceSemantics:
    sem = s.device.semantic
    assert sem is not None, "SessionBlocks gives semantic blocks to semantic devices"
    return sem


class SemanticBlock(ChainBlock):
    """A semantically verified chain (module docstring)."""

    def __init__(
        self, acceptance: AcceptanceModel, draft_times: DraftTimes, fixed_rounds: bool
    ) -> None:
        super().__init__(acceptance, draft_times, fixed_rounds, "semantic verification")

    def uplink_s(self, s: Session, first: bool, draft_rows: DraftRows | None) -> float:
        dev = s.device
        prompt_ids = s.request.num_prompt_tokens if first else 0
        hidden = _semantics(s).uplink_hidden_values(s.sent)
        size = uplink_bytes(s.sent, prompt_ids, dev.vocab_size, draft_rows, hidden)
        return sent_up_s(s, size)

    def judge(self, s: Session) -> tuple[int, int, int]:
        """The head at each mismatch; SH's second hop carries the block's mismatches."""
        sem = _semantics(s)
        num_acc, mismatches = semantic_round(
            self.acceptance, s.seq, s.committed, s.gamma_eff, s.device.rng, sem.reject_share
        )
        return num_acc, self.commit(s, num_acc), mismatches if sem.upload == "sh" else 0

    def extra_hops_s(self, s: Session, size: int) -> float:
        """SH: the server's request for the ``size`` mismatches' hidden states down, then
        those hidden states up."""
        sem = _semantics(s)
        dev = s.device
        link = dev.link
        hops = link.latency_s(sem.request_bytes(size), dev.rng)
        hops += link.uplink_latency_s(sem.second_uplink_bytes(size), dev.rng)
        return hops
