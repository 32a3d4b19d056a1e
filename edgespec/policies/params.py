"""What a policy's parameters may be, shared by every policy kind (a leaf module: policies,
the registry and the drafting-server planner import it, it imports nothing of theirs): the
bound on any γ a parameter names, and the error that names the parameter it is about."""

from __future__ import annotations

MAX_GAMMA = 256
"""The largest γ any policy parameter may name: :class:`StaticWindow`'s ``gamma``,
:class:`DynamicWindow`'s ``max_gamma``, AWC's ``fused_gamma`` and the drafting-server
planner's speculation lengths (a simulator sizes its per-round tables by γ; a server
verifies at most its ``max_draft_tokens``, 32 by default)."""


class PolicyParamError(ValueError):
    """A policy parameter out of its range, raised by a policy's constructor or factory:
    the message as any ``ValueError``'s, plus ``param``, the parameter's name, so a host
    reports it at that parameter's config field (``policies.window.params.gamma``)."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param

    def __reduce__(self) -> tuple[type[PolicyParamError], tuple[str, str]]:
        return (type(self), (self.param, str(self)))  # pickled whole, as sweeps need
