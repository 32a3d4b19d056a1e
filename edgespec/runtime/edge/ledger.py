"""What the device keeps of a generation, round by round (:class:`Ledger`): its output, its
round records, its first token's arrival and the window history (what it records of a
verdict: :func:`round_outcome`); each round's committed tokens (and their
log-probabilities, when asked for, the prompt's before the first round's) handed on as
they arrive."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from edgespec.core.sampling_params import TokenLogprobs
from edgespec.core.types import RoundRecord
from edgespec.policies.inputs import RoundOutcome, WindowHistory
from edgespec.runtime.backends.base import FeatureDraftBackend
from edgespec.runtime.messages import VerifyOutcome, VerifyReply


def round_outcome(
    gamma: int, reply: VerifyReply, num_committed_total: int, network_s: float, fused: bool
) -> RoundOutcome:
    """What the window history records of a verdict (a token tree counts its depth, the
    verifier's ``num_drafted``, not its nodes)."""
    result = reply.outcome.result
    return RoundOutcome(
        gamma=gamma,
        num_drafted=result.num_drafted,
        num_accepted=result.num_accepted,
        num_committed_total=num_committed_total,
        network_s=network_s,
        queue_depth=reply.queue_depth,
        fused=fused,
    )


class Ledger:
    """What a generation committed so far as the device sees it: output, round records
    (each round as it reached the device, distributed or fused), the first token's
    arrival and the session's window history."""

    def __init__(
        self,
        request_id: str,
        on_tokens: Callable[[tuple[int, ...]], bool | None] | None,
        feature: FeatureDraftBackend | None,
        clock: Callable[[], float],
        pair: str = "",
        on_logprobs: Callable[[tuple[TokenLogprobs, ...]], None] | None = None,
        on_prompt_logprobs: Callable[[tuple[TokenLogprobs, ...]], None] | None = None,
    ) -> None:
        self.request_id = request_id
        self._on_logprobs, self._on_prompt_logprobs = on_logprobs, on_prompt_logprobs
        self.output: list[int] = []
        self.rounds: list[RoundRecord] = []
        self.pair = pair  # the draft–target pair's name (WindowObservation.pair)
        self.history = WindowHistory(pair)
        self.first_token_s: float | None = None
        self._on_tokens = on_tokens
        self.ended_here = False  # on_tokens said the output ends (a stop sequence)
        self.finished = False  # a committed round ended the request (its output is whole)
        self._feature = feature
        self.clock = clock

    def commit(
        self,
        gamma: int,
        num_drafted: int,
        reply: VerifyReply,
        times: tuple[float, float, float, float, float],
        num_passes: int | None = None,
        fused: bool = False,
    ) -> bool:
        """Take in a verified round that reached the device at ``end``; ``times`` =
        (start, end, draft, uplink, downlink). Returns whether the request finished: the
        server ended it, or ``on_tokens`` returned ``True`` for this round or an earlier one
        (the device's stop sequence; a fused run is read to its end)."""
        start, end, draft_s, uplink_s, downlink_s = times
        outcome = reply.outcome
        self.output.extend(outcome.committed_token_ids)
        if outcome.committed_token_ids and self.first_token_s is None:
            self.first_token_s = end
        if self._on_prompt_logprobs is not None and outcome.prompt_logprobs is not None:
            self._on_prompt_logprobs(outcome.prompt_logprobs)
        if self._on_logprobs is not None and outcome.logprobs:
            self._on_logprobs(outcome.logprobs)
        if self._on_tokens is not None and outcome.committed_token_ids:
            self.ended_here |= bool(self._on_tokens(outcome.committed_token_ids))
        observe_s = self._observe(outcome)
        network_s = uplink_s + downlink_s
        self.history.record(round_outcome(gamma, reply, len(self.output), network_s, fused), end)
        self.rounds.append(
            RoundRecord(
                request_id=self.request_id,
                round_index=len(self.rounds),
                start_s=start,
                end_s=end,
                draft_s=draft_s + observe_s,
                uplink_s=uplink_s,
                queue_s=reply.queue_s,
                verify_s=reply.verify_s,
                downlink_s=downlink_s,
                num_drafted=num_drafted,
                num_accepted=outcome.result.num_accepted,
                num_committed=len(outcome.committed_token_ids),
                batch_size=reply.batch_size,
                num_draft_passes=num_passes,
                fused=fused,
            )
        )
        self.finished |= outcome.finished or self.ended_here
        return self.finished

    def _observe(self, outcome: VerifyOutcome) -> float:
        """Hand a feature draft the verification's hidden rows; the time it took."""
        if self._feature is None or outcome.target_hidden is None:
            return 0.0
        observed = self.clock()
        rows = np.asarray(outcome.target_hidden, dtype=np.float32)
        self._feature.observe_target_hidden(outcome.target_hidden_start, rows)
        return self.clock() - observed
