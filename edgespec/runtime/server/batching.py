"""The server's batching policy from its config (``ServerConfig.batching``).

Any registered batching policy (:data:`edgespec.policies.registry.BATCHING`) by name with
its parameters. For ``wisp`` a ``profile`` parameter (a bundled profile name or a YAML
file from ``edgespec profile``, ``kind: wisp``) stands for WISP's Eq. 19 coefficients, or
all four coefficients (``a_s``, ``b_compute_s``, ``b_read_s``, ``c_s``) are given; the
rule is the simulator's, :func:`edgespec.hardware.wisp.wisp_batching_params`.
"""

from __future__ import annotations

from typing import Any

from edgespec.config import ConfigError, PolicySpec
from edgespec.hardware.wisp import wisp_batching_params
from edgespec.policies.interfaces import BatchingPolicy
from edgespec.policies.registry import PolicyConfigError, UnknownParamsError, build_policy

NEEDS = (
    "give a kind: wisp profile (--profile FILE_OR_NAME, i.e. batching.params.profile) "
    "or a_s, b_compute_s, b_read_s and c_s"
)
"""What the server says is missing when ``wisp`` has neither a profile nor coefficients."""


def build_batching(spec: PolicySpec) -> BatchingPolicy:
    """The policy ``spec`` names; a bad name, parameter or profile is a
    :class:`ConfigError` at ``batching`` (a parameter's at ``batching.params``, a
    profile's at ``batching.params.profile``)."""
    params: dict[str, Any] = dict(spec.params)
    if spec.name == "wisp":
        params = wisp_batching_params(params, None, field="batching", needs=NEEDS)
    try:
        policy: BatchingPolicy = build_policy("batching", spec.name, params)
    except UnknownParamsError as exc:
        raise ConfigError("batching.params", str(exc)) from exc
    except PolicyConfigError as exc:
        raise ConfigError("batching", str(exc)) from exc
    return policy
