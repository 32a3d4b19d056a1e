"""Stage durations of the edge drafting server (Zhu et al., seed 001, §II-C/D).

A batch of ``b`` tasks padded to I_m input tokens, at its decoding step n (1-based), with
speculation length l:

* Eq. 19, draft on the SBS: T^d_{n,m} = Σ_{i=1}^{p} (c^d_1·F^d_{i,n,m}·b + c^d_2), p = l
  draft iterations (fewer when a stop predictor ended every session's block early), with
  Eq. 13's F^d_{i,n,m}: the prefill of I_m tokens at n = 1, i = 1, otherwise one token over
  I^kv = I_m + ((n−1)·L − 1) + i − 1 cached ones.
* Eq. 14, verification FLOPs of one task's block of l' draft tokens: I_m + l' new tokens,
  nothing cached, at n = 1; otherwise 1 + l' new tokens over I_m + (n−1)·L − 1 cached.
* Eqs. 17–18, a verification pass: T^v = c^v_1·Σ_blocks F^v + c^v_2 (b·F^v_{n,m} for a
  batch's b equal blocks, Eq. 18).

L is Eq. 7's *expected* tokens per verification for the plan's l, in every acceptance
mode: the stage costs are the paper's cost model, not the replayed KV lengths. Full
blocks (l' = l, p = l) take their times from
:meth:`edgespec.policies.drafting_server.costs.PipelineCosts.step_times`, the vectors the
analytic recursion uses, so the simulation reproduces it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from edgespec.policies.drafting_server.costs import PipelineCosts, StepTimes

INITIAL_STEPS = 64
"""Steps computed at first per padded input length; doubled when a batch runs longer."""


@dataclass(slots=True)
class StageClock:
    """Draft and verification seconds of the plan's speculation length ``spec_len``."""

    costs: PipelineCosts
    spec_len: int
    tokens_per_step: float = field(init=False)
    """L (Eq. 7) of ``spec_len``."""
    _times: dict[int, StepTimes] = field(default_factory=dict, init=False, repr=False)
    _num_steps: dict[int, int] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.tokens_per_step = self.costs.tokens_per_step(self.spec_len)

    def step_times(self, input_len: int, step: int) -> StepTimes:
        """:class:`StepTimes` of ``input_len`` covering steps 1..``step`` at least."""
        have = self._num_steps.get(input_len, 0)
        if step > have:
            size = max(INITIAL_STEPS, have)
            while size < step:
                size *= 2
            self._times[input_len] = self.costs.step_times(input_len, self.spec_len, size)
            self._num_steps[input_len] = size
        return self._times[input_len]

    def draft_s(self, input_len: int, step: int, batch_size: int, passes: int) -> float:
        """Eq. 19 over the first ``passes`` (1..l) draft iterations."""
        if not 1 <= passes <= self.spec_len:
            raise ValueError(f"draft passes must be in 1..{self.spec_len}, got {passes}")
        stage = self.costs.draft_stage
        if passes == self.spec_len:
            times = self.step_times(input_len, step)
            return float(batch_size * times.draft_per_task_s[step - 1] + times.draft_fixed_s)
        flops = sum(self._draft_flops(input_len, step, i) for i in range(1, passes + 1))
        return batch_size * stage.c1_s_per_flop * flops + passes * stage.c2_s

    def _draft_flops(self, input_len: int, step: int, iteration: int) -> float:
        """Eq. 13: one task's FLOPs of draft iteration ``iteration`` at step ``step``."""
        model = self.costs.draft
        if step == 1:
            if iteration == 1:
                return float(model.flops(float(input_len), 0.0))
            return float(model.flops(1.0, input_len + iteration - 2.0))
        cached = input_len + (step - 1.0) * self.tokens_per_step - 1.0 + (iteration - 1.0)
        return float(model.flops(1.0, cached))

    def verify_flops(self, input_len: int, step: int, num_draft: int) -> float:
        """Eq. 14: one task's verification FLOPs for a block of ``num_draft`` tokens."""
        model = self.costs.verify
        if step == 1:
            return float(model.flops(float(input_len + num_draft), 0.0))
        cached = input_len + (step - 1.0) * self.tokens_per_step - 1.0
        return float(model.flops(float(1 + num_draft), cached))

    def batch_verify_s(self, input_len: int, step: int, batch_size: int, num_draft: int) -> float:
        """Eq. 18: a batch's b blocks, each padded to ``num_draft`` draft tokens, in one pass."""
        if num_draft == self.spec_len:
            times = self.step_times(input_len, step)
            return float(batch_size * times.verify_per_task_s[step - 1] + times.verify_fixed_s)
        stage = self.costs.verify_stage
        flops = self.verify_flops(input_len, step, num_draft)
        return batch_size * stage.c1_s_per_flop * flops + stage.c2_s

    def pass_s(self, total_flops: float) -> float:
        """Eq. 17 over blocks of different shapes: c^v_1·Σ F^v + c^v_2."""
        stage = self.costs.verify_stage
        return stage.c1_s_per_flop * total_flops + stage.c2_s
