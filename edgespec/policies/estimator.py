"""Pure cost-model formulas shared by the simulator and the SLO-aware scheduler.

Zhu et al. (seed 001, §II-C/D) — a decoder block with hidden size ``h1`` and FFN size
``h2``, ``J`` blocks, FP16 (2 bytes/parameter):

* Eq. 9   parameter bytes      Γ_p = J·(8·h1² + 4·h1·h2)
* Eq. 10  KV bytes per batch   Γ_kv = Σ_k 4·J·h1·(I + O)
* Eq. 11  prefill FLOPs        F1 = J·(8·I·h1² + 4·I²·h1 + 4·I·h1·h2)
* Eq. 12  decode FLOPs         F2 = J·(8·h1² + 4·(I_kv + 1)·h1 + 4·h1·h2)
* Eq. 13/14 are (11)/(12) with the draft's / verifier's input lengths; both are the
  special cases ``n`` new tokens on top of ``c`` cached ones of
  :func:`forward_flops` = 4·J·h1·n·(2·h1 + c + n + h2), summed over a batch by
  :func:`zhu_batch_flops`.
* Eq. 17  runtime              T(b, F) = c1·F·b + c2

WISP (seed 000, §4.4, Eqs. 18–19) — additive verification-time estimator for a batch
where request i forwards L_new,i tokens on top of L_cached,i cached ones:

    N_linear = Σ L_new,i,  N_interactions = Σ (L_cached,i + L_new,i)·L_new,i,
    N_cached = Σ L_cached,i,  T = a·N_linear + b_c·N_interactions + b_r·N_cached + c
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


def zhu_param_bytes(num_layers: int, hidden: int, ffn: int) -> int:
    """Eq. 9: FP16 bytes of the decoder blocks' weights (W_Q, W_K, W_V, W_O, W_1, W_2)."""
    return num_layers * (8 * hidden * hidden + 4 * hidden * ffn)


def zhu_kv_bytes(num_layers: int, hidden: int, context_lengths: Iterable[int]) -> int:
    """Eq. 10: FP16 KV-cache bytes for a batch whose tasks hold ``context_lengths`` tokens."""
    return sum(4 * num_layers * hidden * length for length in context_lengths)


def zhu_prefill_flops(num_layers: int, hidden: int, ffn: int, num_tokens: int) -> int:
    """Eq. 11: FLOPs of a prefill over ``num_tokens`` input tokens."""
    i = num_tokens
    return num_layers * (8 * i * hidden * hidden + 4 * i * i * hidden + 4 * i * hidden * ffn)


def zhu_decode_flops(num_layers: int, hidden: int, ffn: int, kv_len: int) -> int:
    """Eq. 12: FLOPs of one decode step with ``kv_len`` tokens already cached."""
    return num_layers * (8 * hidden * hidden + 4 * (kv_len + 1) * hidden + 4 * hidden * ffn)


def forward_flops(num_layers: int, hidden: int, ffn: int, num_new: int, num_cached: int) -> int:
    """FLOPs of one forward pass of ``num_new`` tokens over ``num_cached`` cached ones.

    4·J·h1·n·(2·h1 + c + n + h2): equals Eq. 11 when c = 0, Eq. 12 when n = 1, and
    Eq. 14 (verifier, n = 1 + l new tokens on a KV cache of c) in general.
    """
    n, c = num_new, num_cached
    return 4 * num_layers * hidden * n * (2 * hidden + c + n + ffn)


def zhu_batch_flops(
    num_layers: int, hidden: int, ffn: int, num_linear: int, num_interactions: int
) -> int:
    """Eqs. 13–14 summed over a batch: J·((8·h1² + 4·h1·h2)·N_lin + 4·h1·N_int).

    :func:`forward_flops` is linear in the batch shape, so a batch whose tasks forward
    n_k new tokens over c_k cached ones costs this with N_lin = Σ n_k and
    N_int = Σ (c_k + n_k)·n_k (:class:`BatchShape`'s counts): the sum of the tasks'
    :func:`forward_flops`, exactly.
    """
    per_token = 8 * hidden * hidden + 4 * hidden * ffn
    return num_layers * (per_token * num_linear + 4 * hidden * num_interactions)


def zhu_runtime_s(c1: float, c2: float, flops: float, batch_size: int) -> float:
    """Eq. 17: T(b, F) = c1·F·b + c2 (``flops`` is per task, ``batch_size`` tasks)."""
    return c1 * flops * batch_size + c2


@dataclass(frozen=True, slots=True)
class BatchShape:
    """Aggregate shape of one forward pass (WISP Eq. 18's three workload counts).

    ``num_linear`` = Σ new tokens, ``num_interactions`` = Σ (cached + new)·new,
    ``num_cached`` = Σ cached tokens, over the ``batch_size`` requests of the batch.
    """

    batch_size: int
    num_linear: int
    num_interactions: int
    num_cached: int

    @staticmethod
    def of(entries: Iterable[tuple[int, int]]) -> BatchShape:
        """Shape of a batch given (num_new, num_cached) per request."""
        size = lin = inter = cached = 0
        for num_new, num_cached in entries:
            size += 1
            lin += num_new
            inter += (num_cached + num_new) * num_new
            cached += num_cached
        return BatchShape(size, lin, inter, cached)


@dataclass(frozen=True, slots=True)
class WispCoefficients:
    """WISP Eq. 19 coefficients, in seconds per unit (token, interaction, cached token)."""

    a_s: float
    b_compute_s: float
    b_read_s: float
    c_s: float

    def __post_init__(self) -> None:
        for name in ("a_s", "b_compute_s", "b_read_s", "c_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be finite and >= 0, got {value}")

    def estimate_s(self, shape: BatchShape) -> float:
        """T = a·N_linear + b_compute·N_interactions + b_read·N_cached + c."""
        return self.time_s(shape.num_linear, shape.num_interactions, shape.num_cached)

    def time_s(self, num_linear: int, num_interactions: int, num_cached: int) -> float:
        """Eq. 19 from the three counts (the one copy: policies and the simulator's
        ``WispCost`` call it)."""
        return (
            self.a_s * num_linear
            + self.b_compute_s * num_interactions
            + self.b_read_s * num_cached
            + self.c_s
        )
