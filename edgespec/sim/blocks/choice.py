"""Which block model a session gets when it opens (:mod:`edgespec.sim.blocks`), from what
the run already holds: its mode, the token trees its trace captured, its stop predictor and
its devices' semantic verification."""

from __future__ import annotations

from edgespec.sim.blocks.centralized import CentralizedBlock
from edgespec.sim.blocks.chain import ChainBlock
from edgespec.sim.blocks.semantic import SemanticBlock
from edgespec.sim.blocks.stop_cut import StopCutBlock
from edgespec.sim.blocks.tree import TreeBlock
from edgespec.sim.model.acceptance import AcceptanceModel
from edgespec.sim.model.device_round import DraftTimes
from edgespec.sim.model.entities import Block, DeviceState, Tree
from edgespec.sim.model.stop_model import StopModel


class SessionBlocks:
    """The run's block models, one of each kind it uses, shared by its sessions.

    ``centralized``: every session's rounds are centralized; ``trees``: the trace has
    token-tree requests; ``stop``: the scenario's stop predictor; ``semantic``: its devices
    verify semantically; ``fixed_rounds``: DSD-Sim's commit rule for every kind.
    """

    __slots__ = ("centralized", "chain", "kinds", "semantic", "stop_cut", "tree")

    def __init__(
        self,
        acceptance: AcceptanceModel,
        draft_times: DraftTimes,
        *,
        centralized: bool,
        trees: bool,
        stop: StopModel | None,
        semantic: bool,
        fixed_rounds: bool,
    ) -> None:
        fixed = fixed_rounds
        metered = stop is not None
        self.chain = ChainBlock(acceptance, draft_times, fixed)
        self.centralized = (
            CentralizedBlock(acceptance, draft_times, fixed, metered) if centralized else None
        )
        overhead_s = None if stop is None else stop.overhead_s
        self.tree = TreeBlock(acceptance, draft_times, fixed, overhead_s) if trees else None
        self.stop_cut = None if stop is None else StopCutBlock(acceptance, draft_times, fixed, stop)
        self.semantic = SemanticBlock(acceptance, draft_times, fixed) if semantic else None
        self.kinds: tuple[str, ...] = (
            (self.centralized.kind,) if self.centralized is not None else self._chain_kinds()
        )
        """The kinds this run's sessions may get."""

    def _chain_kinds(self) -> tuple[str, ...]:
        special = [b.kind for b in (self.tree, self.stop_cut, self.semantic) if b is not None]
        covered = self.stop_cut is not None or self.semantic is not None  # no plain chain left
        return tuple(special if covered else [*special, self.chain.kind])

    def for_session(self, tree: Tree | None, device: DeviceState) -> Block:
        """The block model of a session opening on ``device`` (``tree``: its request's
        captured token-tree rounds)."""
        if self.centralized is not None:
            return self.centralized
        if tree is not None and self.tree is not None:
            return self.tree
        if self.stop_cut is not None:
            return self.stop_cut
        if device.semantic is not None and self.semantic is not None:
            return self.semantic
        return self.chain
