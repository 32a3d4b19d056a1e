"""When a profile's fit is too poor to use as it is: :data:`MIN_PROFILE_R2` (the one
threshold ``edgespec profile`` and ``edgespec calibrate`` judge a held-out R² by) and
:data:`MAX_PROFILE_MAPE_PCT`, and the line ``edgespec profile`` warns with
(:func:`poor_fit_warning`, per fit of a profile: :func:`fit_warnings`)."""

from __future__ import annotations

from typing import Any

from edgespec.profiling.fit import LinearFit

MIN_PROFILE_R2 = 0.5
"""Below this held-out R², the profile's verification-time estimator explains less than
half of how verify time varies over the scenario's shapes: the simulated verify times then
hardly follow batch size and tokens, and the simulator's difference from the real run
measures the fit more than the simulator (the profiles in docs/CALIBRATION.md reached 0.82
and more)."""

MAX_PROFILE_MAPE_PCT = 20.0
"""Above this held-out mean absolute percentage error, a profile's times are off by more
than a fifth on a typical held-out batch, whatever its R²."""


def poor_fit_warning(label: str, fit: LinearFit) -> str | None:
    """The warning for ``fit`` (``label``: whose, e.g. ``target``) when its held-out R²,
    shown to 3 decimals, is below :data:`MIN_PROFILE_R2` (or nan: nothing varied) or its
    MAPE, shown to 1, above :data:`MAX_PROFILE_MAPE_PCT`; ``None`` otherwise."""
    r2, mape = f"{fit.test.r2:.3f}", f"{fit.test.mape_pct:.1f}"
    if float(r2) >= MIN_PROFILE_R2 and float(mape) <= MAX_PROFILE_MAPE_PCT:
        return None
    return (
        f"warning: the {label}'s Eq. 19 fit predicts held-out batches poorly (R² {r2}, "
        f"MAPE {mape}%; wanted R² >= {MIN_PROFILE_R2} and MAPE <= {MAX_PROFILE_MAPE_PCT:g}%): "
        "times simulated from it follow its error more than the batch; profile a larger "
        "grid (without --quick, --scale nearer 1) with more --runs, on a quieter machine"
    )


def fit_warnings(result: Any) -> list[str]:
    """A :func:`poor_fit_warning` per written Eq. 19 fit (the
    target's, the drafter's) that has one."""
    fits = [("target", result.wisp)]
    if result.draft is not None:
        fits.append((f"drafter {result.draft.name}", result.draft.wisp))
    warnings = [poor_fit_warning(label, fit) for label, fit in fits]
    return [warning for warning in warnings if warning is not None]
