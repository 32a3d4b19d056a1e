"""The scenario fields ``mode: centralized`` leaves unused, refused at the field by
:meth:`edgespec.sim.setup.scenario.Scenario.validate` (they ran byte-identical to the
scenario without them). A centralized round (WISP's baseline; DSD has no such mode) drafts
nothing, asks no window policy and is never fused: the target decodes one token per
round. So ``fused_rounds: cloud_only`` (what a fused round is) and a ``dsdsim_compat``
section (DSD-Sim's simplifications of drafted and fused rounds) do nothing there. The
window policy (any, with its γ) may stay, as the acceptance model may: a file may describe
the distributed runs its centralized one is compared with (``edgespec reproduce wisp``
builds its centralized scenarios so, and ``--sweep mode=distributed,centralized`` runs one
file, an AWC window say, both ways).
Semantic verification and a stop predictor are refused in this mode too (at
``verification.rule``, :mod:`edgespec.sim.setup.scenario`; at ``stop_predictor``,
:mod:`edgespec.sim.setup.sources`)."""

from __future__ import annotations

from edgespec.config import applies_only

MODES = "mode: distributed or fused"
"""The modes whose rounds draft or fuse, where these fields act."""


def check_centralized_fields(fused_rounds: str, dsdsim_compat: object) -> None:
    """Refuse, in a centralized scenario, a field it leaves unused (the module docstring):
    ``config field 'fused_rounds': applies only to mode: distributed or fused (mode is
    centralized: ...); drop it``."""
    applies_only(
        "fused_rounds",
        fused_rounds,
        "colocated",
        MODES,
        "mode is centralized: no round is fused, the target decodes every token",
        "drop it",
    )
    applies_only(
        "dsdsim_compat",
        dsdsim_compat,
        None,
        MODES,
        "mode is centralized: DSD-Sim's simplifications change drafted and fused rounds, "
        "and it runs neither",
        "drop it",
    )
