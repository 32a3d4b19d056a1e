"""The server's batching policy from its config (``ServerConfig.batching``): the one
place a server's batching is validated (``--batching``, ``--profile``, ``--guard-ms`` and
a config file's ``batching`` alike).

Any registered batching policy (:data:`edgespec.policies.registry.BATCHING`) by name with
its parameters. For ``wisp`` a ``profile`` parameter (a bundled profile name or a YAML
file from ``edgespec profile``, ``kind: wisp``) stands for WISP's Eq. 19 coefficients, or
all four coefficients (``a_s``, ``b_compute_s``, ``b_read_s``, ``c_s``) are given; the
rule is the simulator's, :func:`edgespec.hardware.wisp.wisp_batching_params`.
"""

from __future__ import annotations

from edgespec.config import ConfigError, PolicySpec
from edgespec.hardware.wisp import wisp_batching_params
from edgespec.policies.interfaces import BatchingPolicy
from edgespec.policies.registry import build_policy_at

NEEDS = (
    "give a kind: wisp profile (--profile FILE_OR_NAME, i.e. batching.params.profile) "
    "or a_s, b_compute_s, b_read_s and c_s"
)
"""What the server says is missing when ``wisp`` has neither a profile nor coefficients."""

WISP_ONLY = ("profile", "guard_s")
"""The parameters ``--profile`` and ``--guard-ms`` set, which only ``wisp`` takes."""


def build_batching(spec: PolicySpec) -> BatchingPolicy:
    """The policy ``spec`` names; a bad name, parameter or profile is a
    :class:`ConfigError` at ``batching.name`` (an unknown policy, or wisp's parameters
    given to another), ``batching.params`` (a parameter the policy does not take),
    ``batching.params.profile`` (a profile, or wisp without coefficients) or ``batching``."""
    params = dict(spec.params)
    if spec.name != "wisp" and any(key in params for key in WISP_ONLY):
        raise ConfigError(
            "batching.name",
            f"--profile and --guard-ms configure the wisp batching policy; batching is "
            f"{spec.name!r} (add --batching wisp)",
        )
    if spec.name == "wisp":
        params = wisp_batching_params(params, None, field="batching", needs=NEEDS)
    policy: BatchingPolicy = build_policy_at("batching", "batching", PolicySpec(spec.name, params))
    return policy
