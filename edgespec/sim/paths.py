"""Which event-loop path a simulation runs, and what that path inlines.

:func:`choose_path` decides once, from the scenario, the entities and the policies, and
returns an :class:`EventPath` that :class:`~edgespec.sim.engine.Simulation` copies onto
itself (its handlers read the flags as attributes on the hot path). The fast path
inlines models and policies for their exact classes only, so anything else refuses it
with a reason (:func:`fast_path_blockers`), printed by ``edgespec sim --verbose`` and
the bench.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgespec.policies.batching import FcfsBatching
from edgespec.policies.inputs import observes
from edgespec.policies.routing import JoinShortestQueueRouting
from edgespec.policies.window import StaticWindow
from edgespec.sim.build import Policies
from edgespec.sim.entities import DeviceState, ServerState
from edgespec.sim.fused_run import fusing
from edgespec.sim.network import Link
from edgespec.sim.rng import UniformStream
from edgespec.sim.scenario import Scenario


@dataclass(frozen=True, slots=True)
class EventPath:
    """The event-loop path of one run.

    ``fast``: the fast path (inlined models and policies). ``static_gamma``: the static
    window's γ, inlined (fast path only). ``observes``: the window policy gets
    observations (else ``UNOBSERVED``). ``hops``: DRAFT_DONE and DELIVER as their own
    events (the ``every_hop`` test switch, straightforward path only). ``lazy``: the
    specialised BATCH_END (``batchend.py``) and no ARRIVE events (``inbound.py``).
    ``fuses``: whether the window policy may go fused (``None``: a policy of unknown
    type); ``may_fuse``: fused rounds are possible on this path. ``description``: which
    path runs and why.
    """

    fast: bool
    static_gamma: int | None
    observes: bool
    fcfs_inline: bool
    jsq_inline: bool
    hops: bool
    lazy: bool
    fuses: bool | None
    may_fuse: bool
    description: str


def fast_path_blockers(devices: list[DeviceState], servers: list[ServerState]) -> list[str]:
    """Why the fast path would not compute this run exactly (empty: it would).

    It inlines :meth:`Link.latency_s <edgespec.sim.network.Link.latency_s>`, the draws of
    :class:`~edgespec.sim.rng.UniformStream` and :class:`ServerState`'s KV LRU, so every
    device link, device stream and server must be exactly those classes (a subclass or
    another model would silently run the old formulas). Trace runs are inlined only for
    exactly :class:`~edgespec.sim.acceptance.TraceAcceptance` (see
    :class:`~edgespec.sim.engine.Simulation`); other acceptance and cost models are
    called, not inlined.
    """
    found: list[tuple[str, set[type], type]] = [
        ("device link", {type(d.link) for d in devices}, Link),
        ("device random stream", {type(d.rng) for d in devices}, UniformStream),
        ("server", {type(s) for s in servers}, ServerState),
    ]
    blockers = [
        f"{what} {name} is not {expected.__name__}"
        for what, kinds, expected in found
        for name in sorted(k.__name__ for k in kinds if k is not expected)
    ]
    if any(not s.prefix_cache for s in servers):  # the inlined LRU always stores
        blockers.append("a server has no prefix cache")
    return blockers


def choose_path(
    scenario: Scenario,
    devices: list[DeviceState],
    servers: list[ServerState],
    policies: Policies,
    *,
    record_rounds: bool,
    stop_cuts_blocks: bool,
    replays_trees: bool,
    every_hop: bool,
) -> EventPath:
    """The path for this run (``stop_cuts_blocks``: a stop predictor is set;
    ``replays_trees``: token-tree traces replay their captured rounds)."""
    window = policies.window
    fuses = fusing(window, scenario.mode)
    blockers = fast_path_blockers(devices, servers)
    if stop_cuts_blocks:  # neither the fast path nor batchend.py cuts blocks short
        blockers.append("a stop predictor cuts blocks short")
    fast = scenario.fast_path and not blockers
    static_gamma = (
        window.gamma if fast and type(window) is StaticWindow and fuses is False else None
    )
    hops = every_hop and not fast
    lazy = (
        not blockers
        and scenario.mode == "distributed"
        and fuses is not True  # an unknown policy's fused answer is refused there
        and not record_rounds
        and not replays_trees
        and not hops
    )
    fcfs_inline = fast and type(policies.batching) is FcfsBatching
    jsq_inline = fast and type(policies.routing) is JoinShortestQueueRouting
    return EventPath(
        fast=fast,
        static_gamma=static_gamma,
        observes=static_gamma is None and observes(window),
        fcfs_inline=fcfs_inline,
        jsq_inline=jsq_inline,
        hops=hops,
        lazy=lazy,
        fuses=fuses,
        may_fuse=fuses is not False and not lazy,
        description=_describe(
            scenario, blockers, fuses, static_gamma is not None, fcfs_inline, jsq_inline
        ),
    )


def _describe(
    scenario: Scenario,
    blockers: list[str],
    fuses: bool | None,
    static_inline: bool,
    fcfs_inline: bool,
    jsq_inline: bool,
) -> str:
    """Which path runs, and why (``edgespec sim --verbose``, the bench)."""
    note = ""
    if scenario.mode == "distributed" and fuses:  # not run by batchend.py's BATCH_END
        note = "; the window policy may go fused: generic BATCH_END"
    if not scenario.fast_path:
        return "straightforward (fast_path=false)" + note
    if blockers:
        return "straightforward (fast path refused: " + "; ".join(blockers) + ")" + note
    inlined = [
        name
        for name, on in (
            ("static window", static_inline),
            ("fcfs batching", fcfs_inline),
            ("jsq routing", jsq_inline),
        )
        if on
    ]
    return "fast (inlined: " + (", ".join(inlined) or "no policies") + ")" + note
