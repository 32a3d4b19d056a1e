"""The server's batching policy from its config (``ServerConfig.batching``).

Any registered batching policy (:data:`edgespec.policies.registry.BATCHING`) by name with
its parameters. For ``wisp`` a ``profile`` parameter (a bundled profile name or a YAML
file from ``edgespec profile``, ``kind: wisp``) stands for WISP's Eq. 19 coefficients
(:func:`edgespec.sim.cost_models.load_wisp_coefficients`, the simulator's loader); given
coefficients (``a_s``, ``b_compute_s``, ``b_read_s``, ``c_s``) are used as they are.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from edgespec.config import ConfigError, PolicySpec
from edgespec.policies.interfaces import BatchingPolicy
from edgespec.policies.registry import PolicyConfigError, build_policy


def build_batching(spec: PolicySpec) -> BatchingPolicy:
    """The policy ``spec`` names; a bad name, parameter or profile is a
    :class:`ConfigError` (the profile loader's own for a profile that is not ``wisp``)."""
    params: dict[str, Any] = dict(spec.params)
    if spec.name == "wisp" and "profile" in params:
        from edgespec.sim.cost_models import load_wisp_coefficients

        coefficients = load_wisp_coefficients(str(params.pop("profile")))
        params = {**dataclasses.asdict(coefficients), **params}
    try:
        policy: BatchingPolicy = build_policy("batching", spec.name, params)
    except PolicyConfigError as exc:
        raise ConfigError("batching", str(exc)) from exc
    return policy
