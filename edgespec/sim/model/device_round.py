"""The device's side of a round in the simulator: how long drafting takes (the block
models of :mod:`edgespec.sim.blocks` ask; the specialised BATCH_END of
:mod:`edgespec.sim.fast.batch_end` inlines it for a plain chain's later rounds)."""

from __future__ import annotations

from edgespec.hardware.cost_models import decode_steps_s, draft_passes_s
from edgespec.sim.model.entities import Session


class DraftTimes:
    """A round's drafting time on its device, memoised: :func:`decode_steps_s` is a pure
    function of (cost model, passes, context, prefill), so cached values are identical."""

    __slots__ = ("_memo", "one_pass")

    def __init__(self, one_pass: bool = False) -> None:
        self._memo: dict[tuple[int, int, int, int], float] = {}
        self.one_pass = one_pass
        """DSD-Sim's ``one_pass_drafting``: a round's drafting costs one pass."""

    def round_s(self, s: Session, passes: int, first: bool, overhead_s: float | None) -> float:
        """``passes`` draft passes after the session's committed tokens (``first``: the
        drafter prefills the prompt; ``overhead_s``: a stop predictor's cost per pass)."""
        if self.one_pass and passes > 1:
            passes = 1
        cost = s.device.draft_cost
        prompt = s.request.num_prompt_tokens
        committed = s.committed
        unseen = s.catch_up  # > 0 after a fused run: what it committed (fused_run.py)
        if unseen:
            s.catch_up = 0
            draft = draft_passes_s(cost, ((prompt + committed, unseen, passes),))
        else:
            key = (id(cost), passes, prompt + committed, prompt if first else 0)
            cached = self._memo.get(key)
            if cached is None:
                cached = self._memo[key] = decode_steps_s(cost, passes, key[2], key[3])
            draft = cached
        if overhead_s is not None:
            draft += passes * overhead_s
        return draft
