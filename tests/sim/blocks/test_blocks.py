"""Block models (edgespec/sim/blocks): which kind a session gets, and each kind's draft and
judge steps on hand-built sessions (exact tokens, bytes and seconds)."""

from __future__ import annotations

import numpy as np
import pytest

from edgespec.core.link_delay import (
    HEADER_BYTES,
    PARENT_BYTES,
    PROB_BYTES,
    TOKEN_ID_BYTES,
    DraftRows,
)
from edgespec.core.types import Request
from edgespec.sim.blocks.chain import ChainBlock
from edgespec.sim.blocks.choice import SessionBlocks
from edgespec.sim.model.acceptance import IidAcceptance, TraceAcceptance
from edgespec.sim.model.device_round import DraftTimes
from edgespec.sim.model.entities import DeviceState, ServerState, Session, Tree
from edgespec.sim.model.network import Link
from edgespec.sim.model.rng import UniformStream
from edgespec.sim.model.semantic import DeviceSemantics
from edgespec.sim.model.stop_model import StopModel, StopPredictorConfig


class _PerPass:
    """A cost model of 1 ms a pass, whatever the shape."""

    def batch_time_s(self, batch_size: int, linear: int, interactions: int, cached: int) -> float:
        return 0.001


_BYTES_PER_S = 1000.0
_LINK = Link(0.0, 0.0, _BYTES_PER_S, 0.0, 0.0)  # no RTT, no jitter: latency = bytes / rate


def _session(
    output: int = 10,
    seq: tuple[int, ...] | None = None,
    tree: Tree | None = None,
    alpha: float = 1.0,
    **kinds: bool,
) -> tuple[Session, SessionBlocks]:
    blocks = _blocks(alpha=alpha, **kinds)
    device = DeviceState(0, "gold", _LINK, _PerPass(), 8, UniformStream(np.random.default_rng(0)))
    if kinds.get("semantic"):
        device.semantic = DeviceSemantics(0.7, "sh", 4, 0.5)  # seed 0's first draw 0.64
    server = ServerState(0, _PerPass(), None, 1000, 8, 1000)
    request = Request("r0", "c0", 0.0, 5, output)
    block = blocks.for_session(tree, device)
    s = Session(0, request, device, server, seq, None, False, block=block)
    s.tree = tree
    return s, blocks


def _blocks(
    centralized: bool = False,
    trees: bool = False,
    stop: bool = False,
    semantic: bool = False,
    fixed_rounds: bool = False,
    alpha: float = 1.0,
) -> SessionBlocks:
    model = StopModel(StopPredictorConfig(None, 1.0, 0.0, 2.0), None, ()) if stop else None
    return SessionBlocks(
        TraceAcceptance() if semantic else IidAcceptance(alpha),
        DraftTimes(),
        centralized=centralized,
        trees=trees,
        stop=model,
        semantic=semantic,
        fixed_rounds=fixed_rounds,
    )


@pytest.mark.parametrize(
    ("kinds", "expected"),
    [
        ({}, ("chain",)),
        ({"fixed_rounds": True}, ("fixed-round chain",)),
        ({"centralized": True, "trees": True, "stop": True}, ("centralized",)),
        ({"trees": True}, ("token-tree", "chain")),
        ({"trees": True, "stop": True}, ("token-tree", "stop-cut")),
        ({"semantic": True}, ("semantic verification",)),
    ],
)
def test_the_kinds_a_run_hands_out(kinds: dict[str, bool], expected: tuple[str, ...]) -> None:
    assert _blocks(**kinds).kinds == expected


def test_a_session_gets_its_request_s_kind() -> None:
    tree: Tree = ((3, 1, 2),)
    assert _session(tree=tree, trees=True, stop=True)[0].block.kind == "token-tree"
    assert _session(trees=True, stop=True)[0].block.kind == "stop-cut"
    assert _session(semantic=True, seq=(1,))[0].block.kind == "semantic verification"
    assert _session(trees=True)[0].block.kind == "chain"


def test_the_chain_drafts_gamma_and_commits_the_accepted_and_the_bonus() -> None:
    s, _ = _session(output=10)
    assert s.block.draft(s, 4, False) == pytest.approx(0.004)  # four passes of 1 ms
    assert (s.sent, s.gamma_eff) == (4, 4)
    up = s.block.uplink_s(s, True, None)
    assert up == (HEADER_BYTES + TOKEN_ID_BYTES * (4 + 5)) / _BYTES_PER_S
    assert (s.round_up_s, s.network_s) == (up, up)
    assert s.block.judge(s) == (4, 5, 0)  # alpha = 1: all accepted, and the target's token
    s.committed = 7
    assert s.block.judge(s) == (4, 3, 0)  # capped to the 3 output tokens left


def test_fixed_rounds_commit_what_was_drafted() -> None:
    s, _ = _session(fixed_rounds=True, alpha=0.0)
    s.block.draft(s, 3, False)
    assert s.block.judge(s) == (0, 3, 0)


def test_a_centralized_round_drafts_nothing_and_sends_the_prompt_once() -> None:
    s, _ = _session(centralized=True, stop=True)
    assert not s.block.drafts
    assert s.block.draft(s, 0, True) == 0.0
    assert (s.sent, s.gamma_eff, s.passes, s.pre_accepted) == (0, 0, 0, None)
    assert s.block.uplink_s(s, True, None) == (HEADER_BYTES + 5 * TOKEN_ID_BYTES) / _BYTES_PER_S
    assert s.block.uplink_s(s, False, None) == 0.0
    assert s.block.judge(s) == (0, 1, 0)


def test_a_tree_round_sends_its_nodes_and_accepts_as_captured() -> None:
    tree: Tree = ((6, 2, 3), (0, 0, 0))  # round 0: 6 nodes in 3 depths, 2 accepted; 1: none
    s, _ = _session(tree=tree, trees=True, alpha=0.0)
    assert s.block.draft(s, 4, False) == pytest.approx(0.003)  # one pass per depth
    assert (s.sent, s.gamma_eff, s.passes) == (6, 3, 3)
    up = s.block.uplink_s(s, False, None)
    assert up == (HEADER_BYTES + (TOKEN_ID_BYTES + PARENT_BYTES) * 6) / _BYTES_PER_S
    assert s.block.uplink_s(s, False, DraftRows("dense")) == up  # sampled: nodes, no rows
    assert s.block.judge(s) == (2, 3, 0)
    s.num_rounds = 1
    s.block.draft(s, 4, False)
    assert (s.sent, s.gamma_eff) == (0, 0)
    assert s.block.judge(s) == (0, 1, 0)
    s.num_rounds = 2  # past the captured rounds: a chain's, its rows sent when sampling
    rows = DraftRows("dense", 0, 0.0)
    s.block.draft(s, 2, False)
    assert (s.sent, s.gamma_eff, s.passes) == (2, 2, 2)
    assert isinstance(s.block, ChainBlock)
    assert s.block.uplink_s(s, False, rows) == ChainBlock.uplink_s(s.block, s, False, rows)
    assert s.block.uplink_s(s, False, rows) > s.block.uplink_s(s, False, None)


def test_the_stop_cut_sends_the_kept_prefix_and_judges_its_early_draw() -> None:
    s, _ = _session(stop=True, alpha=1.0)  # tpr 1: every accepted position is kept
    draft = s.block.draft(s, 3, False)
    assert (s.sent, s.gamma_eff, s.passes, s.pre_accepted) == (3, 3, 3, 3)
    assert draft == pytest.approx(3 * 0.001 + 3 * 0.002)  # passes and the predictor's 2 ms
    assert s.block.judge(s) == (3, 4, 0)


def test_semantic_sh_asks_for_the_mismatches_in_a_second_hop() -> None:
    s, _ = _session(semantic=True, seq=(1, 0, 1, 0, 1, 1))  # the first mismatch rejected
    s.block.draft(s, 5, False)
    assert s.block.uplink_s(s, False, None) == (HEADER_BYTES + 5 * TOKEN_ID_BYTES) / 1000.0
    assert s.block.judge(s) == (1, 2, 2)  # positions 1 and 3 mismatch, the first rejects
    hops = s.block.extra_hops_s(s, 2)
    request = HEADER_BYTES + TOKEN_ID_BYTES * 2
    hidden = HEADER_BYTES + PROB_BYTES * 4 * 2
    assert hops == request / _BYTES_PER_S + hidden / _BYTES_PER_S
