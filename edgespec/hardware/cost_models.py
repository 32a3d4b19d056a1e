"""Forward-pass cost models behind one interface, built from the bundled presets
(:mod:`edgespec.hardware.presets`) or profile files.

A :class:`CostModel` maps a batch's aggregate shape (WISP Eq. 18: batch size, Σ new
tokens, Σ query-key interactions, Σ cached tokens) to seconds. Four kinds:

* :class:`RooflineCost` — FLOPs from the architecture (Zhu Eqs. 11–14 generalised to
  grouped-query attention, gated FFNs and the LM head) and bytes moved (weights once per
  pass, Eq. 9; KV cache read, Eq. 10), time = max(FLOPs / (peak·eff), bytes / (bw·eff))
  + overhead.
* :class:`WispCost` — WISP's additive estimator, Eq. 19, coefficients from a profile file.
* :class:`ZhuCost` — Zhu's fitted runtime T(b, F) = c1·F·b + c2 (Eq. 17), coefficients
  from a profile file, over Zhu's printed FLOPs (Eqs. 13–14: two-matrix FFN, multi-head
  attention, no LM head; a profile's default, what Table II's c's are fitted against) or
  the architecture's (``flops: architecture``, what ``edgespec profile`` fits against).
* :class:`LookupCost` — a measured table of time against Σ new tokens, linearly
  interpolated (and extrapolated from the last two points).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, get_args

from edgespec.config import ConfigError, ConfigFileError, as_written, from_dict
from edgespec.hardware.presets import (
    HardwareSpec,
    ModelArchitecture,
    available,
    load_architecture,
    load_hardware,
)
from edgespec.hardware.profile_info import INFO_FIELDS, check_costs, read_profile_info
from edgespec.hardware.profile_source import profile_mapping
from edgespec.policies.estimator import WispCoefficients, zhu_batch_flops, zhu_runtime_s

__all__ = ["CostModel", "HardwareSpec", "LookupCost", "ModelArchitecture", "RooflineCost",
           "WispCost", "ZhuCost", "available", "build_cost_model", "decode_steps_s",
           "draft_passes_s", "load_architecture", "load_hardware", "load_profile",
           "load_wisp_coefficients"]  # fmt: skip
"""The presets' names are :mod:`edgespec.hardware.presets`', importable from here too."""

ZhuFlops = Literal["printed", "architecture"]


class CostModel(Protocol):
    """Seconds one forward pass takes, from the batch's aggregate shape."""

    def batch_time_s(
        self, batch_size: int, num_linear: int, num_interactions: int, num_cached: int
    ) -> float: ...


@dataclass(frozen=True, slots=True)
class RooflineCost:
    """Roofline: compute- or memory-bound, whichever is slower, plus a fixed overhead.

    compute = (F_lin·N_linear + F_int·N_interactions) / (peak·eff_c), with F_lin the FLOPs
    per new token and F_int per query-key interaction (:meth:`ModelArchitecture.flops`);
    memory = (weights + KV bytes/token·(N_cached + N_linear)) / (bandwidth·eff_m).
    The per-unit constants are computed once, at construction.
    """

    model: ModelArchitecture
    hardware: HardwareSpec
    _lin_s: float = field(init=False, repr=False)
    _int_s: float = field(init=False, repr=False)
    _weights_s: float = field(init=False, repr=False)
    _kv_token_s: float = field(init=False, repr=False)

    def __post_init__(self) -> None:
        hw, m = self.hardware, self.model
        flops_per_s = hw.peak_tflops * 1e12 * hw.compute_efficiency
        bytes_per_s = hw.memory_bandwidth_gb_s * 1e9 * hw.memory_efficiency
        object.__setattr__(self, "_lin_s", m.flops(1, 0) / flops_per_s)
        object.__setattr__(self, "_int_s", m.flops(0, 1) / flops_per_s)
        object.__setattr__(self, "_weights_s", m.weight_bytes / bytes_per_s)
        object.__setattr__(self, "_kv_token_s", m.kv_bytes_per_token / bytes_per_s)

    def batch_time_s(
        self, batch_size: int, num_linear: int, num_interactions: int, num_cached: int
    ) -> float:
        compute_s = self._lin_s * num_linear + self._int_s * num_interactions
        memory_s = self._weights_s + self._kv_token_s * (num_cached + num_linear)
        return (compute_s if compute_s > memory_s else memory_s) + self.hardware.overhead_s


@dataclass(frozen=True, slots=True)
class WispCost:
    """WISP Eq. 19 with coefficients fitted for one (model, hardware) pair."""

    coefficients: WispCoefficients

    def batch_time_s(
        self, batch_size: int, num_linear: int, num_interactions: int, num_cached: int
    ) -> float:
        return self.coefficients.time_s(num_linear, num_interactions, num_cached)


@dataclass(frozen=True, slots=True)
class ZhuCost:
    """Zhu et al. Eq. 17, T(b, F) = c1·F·b + c2, with F·b the batch's total FLOPs (summed
    over its requests, so requests of different lengths may share a batch).

    ``flops="printed"``: Eqs. 13–14 from the model's ``num_layers``, ``hidden_size`` and
    ``ffn_size`` (:func:`~edgespec.policies.estimator.zhu_batch_flops`), the FLOPs Table
    II's coefficients are fitted against (a profile file's default). ``"architecture"``
    (this class's default): :meth:`ModelArchitecture.flops` (gated FFN, grouped-query
    attention, LM head), the FLOPs ``edgespec profile`` fits against.
    """

    model: ModelArchitecture
    c1_s_per_flop: float
    c2_s: float
    flops: ZhuFlops = "architecture"

    def __post_init__(self) -> None:
        _check_coefficient("c1_s_per_flop", self.c1_s_per_flop)
        _check_coefficient("c2_s", self.c2_s)
        if self.flops not in get_args(ZhuFlops):
            raise ValueError(
                f"ZhuCost.flops must be one of {get_args(ZhuFlops)}, got {as_written(self.flops)}"
            )

    def batch_time_s(
        self, batch_size: int, num_linear: int, num_interactions: int, num_cached: int
    ) -> float:
        m, lin, inter = self.model, num_linear, num_interactions
        if self.flops == "printed":
            total = float(zhu_batch_flops(m.num_layers, m.hidden_size, m.ffn_size, lin, inter))
        else:
            total = m.flops(lin, inter)
        return zhu_runtime_s(self.c1_s_per_flop, self.c2_s, total, 1)


@dataclass(frozen=True, slots=True)
class LookupCost:
    """Measured time against Σ new tokens, piecewise linear; optional per-cached-token cost."""

    num_linear: tuple[int, ...]
    time_s: tuple[float, ...]
    per_cached_token_s: float = 0.0

    def __post_init__(self) -> None:
        if len(self.num_linear) < 2 or len(self.num_linear) != len(self.time_s):
            raise ValueError("a lookup table needs >= 2 points and as many times as sizes")
        if any(b <= a for a, b in zip(self.num_linear, self.num_linear[1:], strict=False)):
            raise ValueError("lookup num_linear must be strictly increasing")
        for i, value in enumerate(self.time_s):
            _check_coefficient(f"time_s[{i}]", value, positive=True)
        _check_coefficient("per_cached_token_s", self.per_cached_token_s)

    def batch_time_s(
        self, batch_size: int, num_linear: int, num_interactions: int, num_cached: int
    ) -> float:
        xs, ys = self.num_linear, self.time_s
        i = min(max(bisect.bisect_left(xs, num_linear), 1), len(xs) - 1)
        x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
        base = y0 + (y1 - y0) * (num_linear - x0) / (x1 - x0)
        return max(base, 0.0) + self.per_cached_token_s * num_cached


def load_profile(name_or_path: str) -> CostModel:
    """A WISP, Zhu or lookup cost model from a profile YAML (bundled name or file path;
    :func:`~edgespec.hardware.profile_source.profile_mapping`, which says what a name that
    is neither is)."""
    data, where = profile_mapping(name_or_path)
    if not data:
        raise ConfigFileError(where, "the file is empty; a profile gives its kind and coefficients")
    read_profile_info(data, where)  # its role, clock and measured range are checked too
    kind = data.get("kind")
    params = {k: v for k, v in data.items() if k not in ("kind", *INFO_FIELDS)}
    check_costs(params, where)
    if kind == "wisp":
        return WispCost(from_dict(WispCoefficients, params, where))
    if kind == "lookup":
        return from_dict(LookupCost, params, where)
    if kind == "zhu":
        if not isinstance(data.get("model"), str):
            raise ConfigError(f"{where}.model", "a zhu profile names its model preset")
        flops = params.pop("flops", "printed")
        if flops not in get_args(ZhuFlops):
            raise ConfigError(
                f"{where}.flops", f"must be 'printed' or 'architecture', got {as_written(flops)}"
            )
        coeffs = from_dict(_ZhuCoefficients, params, where)
        return ZhuCost(load_architecture(data["model"]), coeffs.c1_s_per_flop, coeffs.c2_s, flops)
    raise ConfigError(f"{where}.kind", f"must be 'wisp', 'zhu' or 'lookup', got {as_written(kind)}")


def load_wisp_coefficients(name_or_path: str) -> WispCoefficients:
    """Eq. 19's coefficients from a ``kind: wisp`` profile (bundled name or file path), for
    the ``wisp`` batching policy's estimator."""
    cost = load_profile(name_or_path)
    if not isinstance(cost, WispCost):
        raise ConfigError("profile", f"{name_or_path!r} is not a 'wisp' profile")
    return cost.coefficients


PROFILE_KINDS: dict[type, str] = {WispCost: "wisp", ZhuCost: "zhu", LookupCost: "lookup"}
"""The ``kind`` of the profile file that :func:`load_profile` read each cost model from."""


@dataclass(frozen=True, slots=True)
class _ZhuCoefficients:
    c1_s_per_flop: float
    c2_s: float

    def __post_init__(self) -> None:
        _check_coefficient("c1_s_per_flop", self.c1_s_per_flop)
        _check_coefficient("c2_s", self.c2_s)
        if self.c1_s_per_flop == 0 and self.c2_s == 0:  # a simulation would never end
            raise ValueError("c1_s_per_flop and c2_s are both 0: a pass would take no time")


def _check_coefficient(name: str, value: float, positive: bool = False) -> None:
    """A fitted or measured cost is a finite number of seconds >= 0, > 0 when ``positive``
    (a measured pass: a simulation of passes that take no time never reaches its end)."""
    if not (math.isfinite(value) and (value > 0 if positive else value >= 0)):
        raise ValueError(f"{name} must be finite and {'>' if positive else '>='} 0, got {value}")


def build_cost_model(
    kind: str, model: str, hardware: str, profile: str | None, where: str
) -> CostModel:
    """The cost model a scenario names at ``where`` (its ``cost_model`` field): roofline
    from presets, or a profile file, whose own ``kind`` must be ``kind`` (a zhu ``kind``
    beside a wisp profile ran as wisp, and the run folder said zhu):
    ``config field '...cost_model.kind': 'a100-qwen3-32b' is a 'wisp' profile, not a
    'zhu' one; give kind: wisp, or a 'zhu' profile``."""
    if kind == "roofline":
        return RooflineCost(load_architecture(model), load_hardware(hardware))
    if profile is None:
        raise ConfigError(f"{where}.profile", f"cost model {kind!r} needs a profile")
    cost = load_profile(profile)
    found = PROFILE_KINDS[type(cost)]
    if found != kind:
        raise ConfigError(
            f"{where}.kind",
            f"{profile!r} is a {found!r} profile, not a {kind!r} one; give kind: {found}, "
            f"or a {kind!r} profile",
        )
    return cost


def decode_steps_s(cost: CostModel, num_steps: int, context: int, prefill: int = 0) -> float:
    """Time of ``num_steps`` sequential one-token passes after ``context`` tokens.

    When ``prefill`` > 0 the first pass instead forwards that many uncached tokens (the
    prompt) and yields the first draft token: the drafter's cost for its first round.
    """
    if num_steps <= 0:
        return 0.0
    total = 0.0
    first = 0
    if prefill > 0:
        total += cost.batch_time_s(1, prefill, prefill * prefill, 0)
        context, first = prefill, 1
    for step in range(first, num_steps):
        cached = context + step
        total += cost.batch_time_s(1, 1, cached + 1, cached)
    return total


def draft_passes_s(cost: CostModel, drafts: Sequence[tuple[int, int, int]]) -> float:
    """Time of the draft passes of ``drafts`` = (context, unseen, γ) entries drafted together.

    ``max γ`` sequential passes; pass ``k`` batches the entries that draft more than ``k``
    tokens. An entry forwards one token per pass after ``context + k`` cached tokens
    (:func:`decode_steps_s`), except that with ``unseen`` > 0 its first pass forwards the
    ``unseen`` context tokens its drafter has not processed yet on top of the
    ``context - unseen`` it has (``unseen == context``: the prefill of
    :func:`decode_steps_s`). One entry gives :func:`decode_steps_s`'s floats exactly.
    """
    total = 0.0
    for k in range(max((gamma for _, _, gamma in drafts), default=0)):
        size = num_linear = num_interactions = num_cached = 0
        for context, unseen, gamma in drafts:
            if gamma <= k:
                continue
            new, cached = (unseen, context - unseen) if k == 0 and unseen > 0 else (1, context + k)
            size += 1
            num_linear += new
            num_interactions += (cached + new) * new
            num_cached += cached
        total += cost.batch_time_s(size, num_linear, num_interactions, num_cached)
    return total
