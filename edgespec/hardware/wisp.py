"""WISP batching's parameters as both hosts read them: a ``profile`` or Eq. 19's
coefficients in, the coefficients out (one rule for the simulator and the server)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from edgespec.config import ConfigError, at_field
from edgespec.hardware.cost_models import load_wisp_coefficients
from edgespec.policies.registry import accepted_params

COEFFICIENTS = ("a_s", "b_compute_s", "b_read_s", "c_s")
"""WISP's Eq. 19 coefficients, as the ``wisp`` batching policy takes them."""

NEEDS = "give a profile (or a_s, b_compute_s, b_read_s, c_s)"
"""What :func:`wisp_batching_params` says is missing when nothing gives coefficients."""


def wisp_batching_params(
    params: Mapping[str, Any],
    fallback_profile: str | None = None,
    *,
    field: str = "policies.batching",
    fallback_field: str = "",
    needs: str = NEEDS,
) -> dict[str, Any]:
    """The ``wisp`` batching policy's parameters with its Eq. 19 coefficients filled in.

    The rule: either all four coefficients (``a_s``, ``b_compute_s``, ``b_read_s``,
    ``c_s``), used as given, or a ``profile`` alone (a bundled name or a ``kind: wisp``
    profile YAML), whose coefficients are used; some coefficients but not all four, or
    coefficients next to a profile, are refused (a profile would silently override them,
    or they it). Without either, ``fallback_profile`` (the simulator: its first server
    pool's wisp profile; errors loading it are reported at ``fallback_field``) stands for
    the profile; without that, the error says what to give (``needs``). ``guard_s`` is
    passed on. Every error is a :class:`ConfigError` at the policy spec ``field``'s
    ``params`` (or ``params.profile``): an unknown parameter, a partial set, a profile
    that is missing, not YAML or not ``kind: wisp``, or a bad field of the profile file
    (``FILE.a_s: required field is missing``).
    """
    params = dict(params)
    known = sorted({"profile", *(accepted_params("batching", "wisp") or ())})
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise ConfigError(
            f"{field}.params",
            f"batching policy 'wisp' has no parameter(s) {unknown}; known: {known}",
        )
    given = [k for k in COEFFICIENTS if k in params]
    if given and (len(given) < len(COEFFICIENTS) or "profile" in params):
        missing = [k for k in COEFFICIENTS if k not in params]
        beside = f"without {missing[0]}" if missing else "with a profile"
        raise ConfigError(
            f"{field}.params",
            f"wisp coefficient(s) {', '.join(given)} given {beside}: give all four "
            "(a_s, b_compute_s, b_read_s, c_s), or a profile alone",
        )
    if given:
        return params
    profile, where = params.pop("profile", None), f"{field}.params.profile"
    if profile is None:
        if fallback_profile is None:
            raise ConfigError(where, f"wisp batching needs Eq. 19 coefficients: {needs}")
        profile, where = fallback_profile, fallback_field or where
    try:
        coefficients = load_wisp_coefficients(str(profile))
    except ConfigError as exc:  # a profile file's own field is named too
        raise at_field(exc, where, str(profile)) from exc
    return {**params, **dataclasses.asdict(coefficients)}
