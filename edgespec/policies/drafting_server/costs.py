"""Zhu et al. (seed 001, §II-C/D) per-step stage times and memory, as printed.

A batch of ``b`` tasks, inputs right-padded to ``I`` tokens, at decoding step ``n``
(1-based) with speculation length ``l`` and expected tokens per verification ``L``
(Eq. 7). Per task, with the ``forward_flops`` form 4·J·h1·new·(2·h1 + cached + new + h2)
(two-matrix FFN, multi-head attention, no LM head):

* Eq. 13 draft, iteration i = 1..l:  n = 1, i = 1: a prefill of I tokens; otherwise one
  token over I^kv = I + ((n−1)·L − 1) + i − 1 cached ones.
* Eq. 14 verify:  n = 1: I + l new tokens, nothing cached; otherwise 1 + l new tokens over
  I^kv = I + (n−1)·L − 1 cached ones.
* Eqs. 18–19: T^v = c^v_1·F^v·b + c^v_2;  T^d = Σ_i (c^d_1·F^d_i·b + c^d_2).
* Eqs. 9–10 (SBS only, FP16): Γ_p + Σ_k 4·J_d·h^d_1·(I + O) ≤ Γ_s.

``L`` is fractional and is used inside the KV lengths as printed (SEED-NOTES §2.5, 3).
The step-time vectors are the per-task times for n = 1..N (index n−1): a batch of b tasks
takes ``b·per_task + fixed`` (:meth:`StepTimes.batch`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class ModelDims:
    """Table I: decoder blocks ``num_layers`` (J), hidden size h1, FFN size h2."""

    name: str
    num_layers: int
    hidden: int
    ffn: int

    def __post_init__(self) -> None:
        if min(self.num_layers, self.hidden, self.ffn) < 1:
            raise ValueError(f"model {self.name!r}: layers, hidden and ffn must be >= 1")

    @property
    def param_bytes(self) -> float:
        """Eq. 9: FP16 bytes of the blocks' weights, J·(8·h1² + 4·h1·h2)."""
        return float(self.num_layers * (8 * self.hidden**2 + 4 * self.hidden * self.ffn))

    def kv_bytes_per_token(self) -> float:
        """Eq. 10's per-token term, 4·J·h1 bytes."""
        return float(4 * self.num_layers * self.hidden)

    def flops(self, num_new: float, num_cached: FloatArray | float) -> FloatArray:
        """Per-task FLOPs of a pass: 4·J·h1·new·(2·h1 + cached + new + h2)."""
        cached = np.asarray(num_cached, dtype=np.float64)
        return (
            4.0
            * self.num_layers
            * self.hidden
            * num_new
            * (2.0 * self.hidden + cached + num_new + self.ffn)
        )


@dataclass(frozen=True, slots=True)
class StageCoefficients:
    """Eq. 17, T(b, F) = c1·F·b + c2: seconds per FLOP and per pass."""

    c1_s_per_flop: float
    c2_s: float

    def __post_init__(self) -> None:
        if self.c1_s_per_flop < 0 or self.c2_s < 0:
            raise ValueError("Eq. 17 coefficients must be >= 0")


@dataclass(frozen=True, slots=True)
class PipelineCosts:
    """Everything the latency model needs besides the tasks: the two models, their
    stages' coefficients (Table II), the SBS memory limit Γ_s and the acceptance rate α."""

    draft: ModelDims
    verify: ModelDims
    draft_stage: StageCoefficients
    verify_stage: StageCoefficients
    sbs_memory_bytes: float
    acceptance: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.acceptance <= 1.0:
            raise ValueError(f"acceptance rate must be in [0, 1], got {self.acceptance}")
        if self.sbs_memory_bytes <= self.draft.param_bytes:
            raise ValueError(
                f"SBS memory {self.sbs_memory_bytes:.3g} B does not hold the draft model's "
                f"weights ({self.draft.param_bytes:.3g} B, Eq. 9)"
            )

    def tokens_per_step(self, spec_len: int) -> float:
        """Eq. 7: L = (1 − α^{1+l}) / (1 − α); l + 1 when α = 1."""
        if spec_len < 1:
            raise ValueError(f"speculation length must be >= 1, got {spec_len}")
        a = self.acceptance
        if a >= 1.0:
            return float(spec_len + 1)
        return float((1.0 - a ** (1 + spec_len)) / (1.0 - a))

    def num_steps(self, output_len: int, spec_len: int) -> int:
        """Eq. 8: n = ⌈O / L⌉ verification steps for ``output_len`` tokens."""
        return max(1, int(np.ceil(output_len / self.tokens_per_step(spec_len) - 1e-12)))

    def max_batch(self, input_len: int, output_len: int) -> int:
        """Most tasks of padded lengths (I, O) one batch may hold on the SBS (Eqs. 9–10)."""
        free = self.sbs_memory_bytes - self.draft.param_bytes
        per_task = self.draft.kv_bytes_per_token() * (input_len + output_len)
        return int(free // per_task)

    def step_times(self, input_len: int, spec_len: int, num_steps: int) -> StepTimes:
        """Per-task draft and verify times of a batch padded to ``input_len``, steps 1..N."""
        big_l = self.tokens_per_step(spec_len)
        n = np.arange(1, num_steps + 1, dtype=np.float64)
        base = input_len + (n - 1.0) * big_l - 1.0  # I^kv at i = 1 (n ≥ 2)
        i = np.arange(1, spec_len + 1, dtype=np.float64)
        draft_flops = self.draft.flops(1.0, base[:, None] + (i[None, :] - 1.0)).sum(axis=1)
        # n = 1: iteration 1 is the prefill; iterations i ≥ 2 see I + i − 2 cached tokens.
        first = (
            self.draft.flops(float(input_len), 0.0)
            + self.draft.flops(1.0, input_len + i[1:] - 2.0).sum()
        )
        draft_flops[0] = first
        verify_flops = self.verify.flops(float(1 + spec_len), base)
        verify_flops[0] = self.verify.flops(float(input_len + spec_len), 0.0)
        return StepTimes(
            draft_per_task_s=self.draft_stage.c1_s_per_flop * draft_flops,
            draft_fixed_s=spec_len * self.draft_stage.c2_s,
            verify_per_task_s=self.verify_stage.c1_s_per_flop * verify_flops,
            verify_fixed_s=self.verify_stage.c2_s,
        )


@dataclass(frozen=True, slots=True, eq=False)
class StepTimes:
    """Eqs. 18–19 for one padded input length: per-task seconds of each step's draft
    (summed over its l iterations) and verification, and the per-step fixed parts."""

    draft_per_task_s: FloatArray
    draft_fixed_s: float
    verify_per_task_s: FloatArray
    verify_fixed_s: float

    def batch(self, batch_size: int, num_steps: int) -> tuple[FloatArray, FloatArray]:
        """(T^d_n, T^v_n) for n = 1..num_steps of a batch of ``batch_size`` tasks."""
        d = batch_size * self.draft_per_task_s[:num_steps] + self.draft_fixed_s
        v = batch_size * self.verify_per_task_s[:num_steps] + self.verify_fixed_s
        return d, v
