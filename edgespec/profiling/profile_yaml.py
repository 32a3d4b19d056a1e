"""The text of one profile file ``edgespec profile`` (or ``edgespec calibrate``'s fresh
profile) writes: a header comment saying which command measured it and how, and how well
its fit predicts held-out batches (the metrics of the coefficients written, and which terms
were clipped to 0), then the fields the loader reads
(:func:`edgespec.hardware.cost_models.load_profile`; what a profile says of itself:
:mod:`edgespec.hardware.profile_info`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from edgespec.config import dump_yaml
from edgespec.hardware.cost_models import ZhuFlops
from edgespec.models.registry import recorded_name
from edgespec.profiling.fit import LinearFit, wisp_coefficients


@dataclass(frozen=True, slots=True)
class MeasuredRange:
    """The largest batch (requests) and context (tokens, cached plus new, of one request
    in a pass) a profile's timed passes had."""

    max_batch_size: int
    max_context_tokens: int


@dataclass(frozen=True, slots=True)
class ProfileOrigin:
    """Where and how a profile was measured: ``tool``, the edgespec command that measured
    it (``edgespec profile``, or ``edgespec calibrate`` for its fresh profile), ``command``
    its whole command line."""

    hardware: str
    command: str
    load_average: tuple[float, float, float]
    tool: str = "edgespec profile"


@dataclass(frozen=True, slots=True)
class ProfileFile:
    """One profile file's content: whose (``role`` ``target`` or ``draft``, ``model``),
    which fit (``kind`` ``wisp`` or ``zhu``, a zhu one over which ``flops``), by what
    clock, over what range."""

    role: str
    model: str
    kind: str
    fit: LinearFit
    clock: str
    measured: MeasuredRange | None
    """``None``: no timed pass to say it of."""
    flops: ZhuFlops = "architecture"
    """A zhu fit's FLOPs: :meth:`ModelArchitecture.flops`, or Zhu's printed Eqs. 13-14."""


def target_range(entries: Sequence[Sequence[tuple[int, int]]]) -> MeasuredRange | None:
    """The range of timed batches of (new, cached) entries (``None`` for none)."""
    if not any(entries):
        return None
    return MeasuredRange(
        max(len(batch) for batch in entries),
        max(new + cached for batch in entries for new, cached in batch),
    )


def clipped_line(fit: LinearFit) -> str | None:
    """What is said of the terms fixed at 0 (``None`` when there are none)."""
    if not fit.clipped:
        return None
    return (
        f"{', '.join(fit.clipped)} clipped to 0 (negative in the unconstrained fit) and the "
        "other terms refitted; the metrics are the written coefficients'"
    )


def _fit_name(profile: ProfileFile) -> str:
    """``wisp``, or ``zhu`` and the FLOPs it is fitted against."""
    return profile.kind if profile.kind == "wisp" else f"zhu, {profile.flops} FLOPs"


def _header(profile: ProfileFile, origin: ProfileOrigin, role: str) -> str:
    fit = profile.fit
    t, iv = fit.test, fit.test_intervals
    lines = [
        f"# {role} {profile.model} ({_fit_name(profile)}), measured by `{origin.tool}` "
        f"on {origin.hardware}",
        f"# command: {origin.command}",
        f"# load average during the run: {' '.join(f'{x:.2f}' for x in origin.load_average)}",
        f"# held-out fit ({t.num_samples} samples): R^2 {t.r2:.4f} "
        f"[{iv[0][0]:.4f}, {iv[0][1]:.4f}], MAE {t.mae_s * 1e3:.3f} ms, "
        f"MAPE {t.mape_pct:.2f}% (bootstrap 95% intervals)",
    ]
    clipped = clipped_line(fit)
    if clipped is not None:
        lines.append(f"# {clipped}")
    for name, value, (low, high) in zip(fit.names, fit.values, fit.intervals, strict=True):
        lines.append(f"# {name} = {value:.4e}, 95% CI [{low:.4e}, {high:.4e}]")
    return "\n".join(lines) + "\n"


def profile_text(profile: ProfileFile, origin: ProfileOrigin) -> str:
    """The file: the header comment, then its fields."""
    role = "drafter" if profile.role == "draft" else profile.role
    what = f"{role} {profile.model}, {_fit_name(profile)}"
    data: dict[str, Any] = {
        "source": f"{origin.tool} ({what}; see comments)",
        "kind": profile.kind,
        "role": profile.role,
        "clock": profile.clock,
        "hardware": origin.hardware,
        "model": recorded_name(profile.model),
    }
    if profile.measured is not None:
        data["measured_max_batch_size"] = profile.measured.max_batch_size
        data["measured_max_context_tokens"] = profile.measured.max_context_tokens
    if profile.kind == "wisp":
        coeffs, _ = wisp_coefficients(profile.fit)
        data.update({name: getattr(coeffs, name) for name in profile.fit.names})
    else:
        data["flops"] = profile.flops
        data.update({k: max(v, 0.0) for k, v in profile.fit.as_dict().items()})
    return _header(profile, origin, role) + dump_yaml(data, sort_keys=False)
