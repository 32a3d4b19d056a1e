"""The device's side of a round in the simulator: how long drafting takes and the
uplink's latency (the reference round and a session's first round; the specialised
BATCH_END of :mod:`edgespec.sim.fast.batch_end` inlines both for later rounds)."""

from __future__ import annotations

from edgespec.hardware.cost_models import decode_steps_s, draft_passes_s
from edgespec.sim.model.entities import Session
from edgespec.sim.model.network import uplink_bytes


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


def uplink_s(s: Session, first: bool, distributed: bool, send_probs: bool) -> float:
    """The round's uplink latency, drawn from the device's stream, added to the session's
    network time (``round_up_s``); 0 for a centralized round after the prompt. Under
    semantic verification with FH upload the block carries every drafted token's hidden
    state (:mod:`edgespec.sim.model.semantic`)."""
    dev = s.device
    if distributed:
        prompt_ids = s.request.num_prompt_tokens if first else 0
        sem = dev.semantic
        hidden = 0 if sem is None else sem.uplink_hidden_values(s.sent)
        size = uplink_bytes(
            s.sent, prompt_ids, dev.vocab_size, send_probs, hidden, s.tree is not None
        )
    elif first:
        size = uplink_bytes(0, s.request.num_prompt_tokens, dev.vocab_size, False)
    else:
        s.round_up_s = 0.0
        return 0.0
    up = dev.link.uplink_latency_s(size, dev.rng)
    s.round_up_s = up
    s.network_s += up
    return up
