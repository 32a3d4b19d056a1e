"""The handler sets a run may take, and the one function that chooses among them.

A handler set is the simulator's behaviour over the run's data
(:class:`~edgespec.sim.state.SimState`): the reference round
(:class:`~edgespec.sim.loop.server.ReferenceLoop`, what ``fast_path: false`` always runs)
or a named specialisation of it that must produce identical records
(tests/sim/test_handler_sets.py):

============  ==================================================================
name          what it changes, and which runs it can take
============  ==================================================================
reference     nothing: every run
every_hop     DRAFT_DONE and DELIVER as events of their own: every run (a test set)
inlined       static window, FCFS and JSQ inlined for their exact classes; a
              DISPATCH run at once when alone: runs whose links, random streams and
              servers are the simulator's own classes (:func:`inline_blockers`)
inbound       no ARRIVE event per round, one closure for BATCH_END and the next
              round, every policy called: those runs whose sessions draft the
              plain chain (:mod:`edgespec.sim.blocks`) in distributed rounds,
              without round records, with a window policy not known to go fused
fast          ``inbound`` with the policies inlined as in ``inlined``
============  ==================================================================

:func:`choose_handler_set` takes ``fast`` where it can, else ``inlined``; the reference
with ``fast_path: false`` or when the run's classes refuse inlining (the reason is in
``SimResult.path``, printed by ``edgespec sim --verbose`` and the bench).
"""

from __future__ import annotations

from dataclasses import dataclass

from edgespec.errors import UserInputError
from edgespec.sim.fast.sets import FastLoop, InboundLoop, InlinedLoop, policy_inlines
from edgespec.sim.loop.device import session_blocks
from edgespec.sim.loop.every_hop import EveryHopLoop
from edgespec.sim.loop.server import ReferenceLoop
from edgespec.sim.model.entities import DeviceState, ServerState
from edgespec.sim.model.network import Link
from edgespec.sim.model.rng import UniformStream
from edgespec.sim.state import SimState

HANDLER_SETS: dict[str, type[ReferenceLoop]] = {
    "reference": ReferenceLoop,
    "every_hop": EveryHopLoop,
    "inlined": InlinedLoop,
    "inbound": InboundLoop,
    "fast": FastLoop,
}


@dataclass(frozen=True, slots=True)
class Choice:
    """The handler set a run takes (``name``) and why (``description``)."""

    name: str
    description: str


def inline_blockers(devices: list[DeviceState], servers: list[ServerState]) -> list[str]:
    """Why the specialised sets would not compute this run exactly (empty: they would).

    They inline :meth:`Link.latency_s <edgespec.sim.model.network.Link.latency_s>`, the
    draws of :class:`~edgespec.sim.model.rng.UniformStream` and :class:`ServerState`'s KV
    LRU, so every device link, device stream and server must be exactly those classes (a
    subclass or another model would silently run the old formulas), and no server may be
    SLED's (no prefix cache) or prefill in parts (the inlined LRU always stores, and its
    batches are whole passes). Trace runs are inlined only for exactly
    :class:`~edgespec.sim.model.acceptance.TraceAcceptance`; other acceptance and cost
    models are called, not inlined.
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
    if any(s.part_tokens is not None for s in servers):  # their batches are whole passes
        blockers.append("a server prefills in parts (prefill_part_tokens)")
    return blockers


def inbound_blockers(state: SimState) -> list[str]:
    """Why the inbound sets cannot take this run, beyond :func:`inline_blockers`: their
    BATCH_END inlines the plain chain's distributed round (:mod:`edgespec.sim.blocks`),
    without round records, and refuses a fused window decision."""
    blockers = [f"{kind} blocks" for kind in session_blocks(state).kinds if kind != "chain"]
    if state.fused_mode:
        blockers.append("mode fused")
    if state.fuses is True:  # an unknown policy's fused answer is refused there
        blockers.append("the window policy may go fused")
    if state.record_rounds:
        blockers.append("round records")
    return blockers


def choose_handler_set(state: SimState, requested: str | None = None) -> Choice:
    """The handler set for this run: ``requested`` by name (refused with the reason when
    it cannot run this scenario exactly), else the module docstring's choice."""
    inline = inline_blockers(state.devices, state.servers)
    if state.scenario.dsdsim_compat is not None:  # its simplifications: the reference round
        inline.append("DSD-Sim's simplifications (dsdsim_compat)")
    inbound = inline + inbound_blockers(state)
    if requested is not None:
        if requested not in HANDLER_SETS:
            raise UserInputError(
                f"unknown handler set {requested!r}; known: {sorted(HANDLER_SETS)}"
            )
        refused = {"inlined": inline, "inbound": inbound, "fast": inbound}.get(requested)
        if refused:
            raise UserInputError(
                f"handler set {requested!r} cannot run this scenario: " + "; ".join(refused)
            )
        return Choice(requested, f"{requested} (asked for)")
    if not state.scenario.fast_path:
        return Choice("reference", "reference (fast_path=false)")
    if inline:
        return Choice("reference", "reference (inlining refused: " + "; ".join(inline) + ")")
    name = "inlined" if inbound else "fast"
    inlines = policy_inlines(state)
    inlined = [
        what
        for what, on in (
            ("static window", inlines.static_gamma is not None),
            ("fcfs batching", inlines.fcfs),
            ("jsq routing", inlines.jsq),
        )
        if on
    ]
    why = f"; inbound refused: {'; '.join(inbound)}" if inbound else ""
    return Choice(name, f"{name} (inlined: {', '.join(inlined) or 'no policies'}{why})")


def build_loop(state: SimState, choice: Choice) -> ReferenceLoop:
    """The chosen handler set over ``state``."""
    return HANDLER_SETS[choice.name](state)
