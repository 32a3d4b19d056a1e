"""Semantic verification's verdict in the simulator (edgespec/sim/model/semantic.py): a
round walks its block to the first rejected mismatch; a verdict known without the head
(share 1: T = 0, share 0: T = 16) draws only what its tokens need, so share 1 gives exact
verification's records; a threshold is refused where it would decide nothing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgespec.cli import main
from edgespec.config import ConfigError
from edgespec.sim.model.acceptance import IidAcceptance, TraceAcceptance
from edgespec.sim.model.rng import UniformStream
from edgespec.sim.model.semantic import semantic_round
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import tiny_scenario
from tests.sim.model.test_semantic_table import TABLE


class _Counting(UniformStream):
    """A stream that counts its draws."""

    def __init__(self) -> None:
        super().__init__(np.random.Generator(np.random.PCG64(1)))
        self.draws = 0

    def next(self) -> float:
        self.draws += 1
        return super().next()


class _Fixed(UniformStream):
    """A stream that gives ``values`` in turn and counts its draws."""

    def __init__(self, *values: float) -> None:
        super().__init__(np.random.Generator(np.random.PCG64(1)))
        self.values = list(values)
        self.draws = 0

    def next(self) -> float:
        self.draws += 1
        return self.values.pop(0)


def test_a_round_walks_the_block_and_stops_at_the_first_rejected_mismatch() -> None:
    trace = TraceAcceptance()
    seq = (1, 0, 1, 1, 0, 1, 1, 1)  # mismatches at positions 1 and 4
    rng = _Fixed(0.9, 0.9)
    assert semantic_round(trace, seq, 0, 8, rng, 0.5) == (8, 2)  # both accepted
    assert rng.draws == 2  # one decision per mismatch, none for the trace
    rng = _Fixed(0.1)
    assert semantic_round(trace, seq, 0, 8, rng, 0.5) == (1, 2)  # the first ends the round
    assert rng.draws == 1  # no decision after it, but its mismatches are counted (SH)
    rng = _Fixed(0.9, 0.1)
    assert semantic_round(trace, seq, 0, 8, rng, 0.5) == (4, 2)  # the second ends it
    assert semantic_round(trace, seq, 5, 3, _Fixed(), 0.5) == (3, 0)
    assert semantic_round(trace, seq, 0, 0, _Fixed(), 0.5) == (0, 0)


def test_a_certain_verdict_asks_no_head_and_draws_what_its_tokens_need() -> None:
    """Share 1 (T = 0): exact verification, its draws and no mismatch sent (SH asks for
    no hidden state); share 0 (T = 16): the whole block, nothing drawn."""
    trace = TraceAcceptance()
    seq = (1, 0, 1, 1, 0, 1, 1, 1)
    rng = _Counting()
    assert semantic_round(trace, seq, 0, 8, rng, 1.0) == (1, 0)
    assert semantic_round(trace, seq, 2, 5, rng, 1.0) == (2, 0)  # exact's 2 accepted
    assert semantic_round(trace, seq, 0, 8, rng, 0.0) == (8, 0)
    assert rng.draws == 0
    base, lossy, exact = IidAcceptance(0.6), _Counting(), _Counting()
    for position in range(50):
        got = semantic_round(base, None, position, 8, lossy, 1.0)
        assert got == (base.accepted(None, position, 8, exact), 0)
        assert lossy.draws == exact.draws  # the same draws, so the same stream after
    iid = _Counting()
    assert semantic_round(base, None, 0, 8, iid, 0.0) == (8, 0) and iid.draws == 0


COMMON = ["duration_s=20", "record_rounds=true"]  # tiny_scenario: iid α = 0.7, jitter, loss


def test_share_1_under_sh_gives_exact_verifications_records(tmp_path: Path) -> None:
    """Every mismatch rejected (reject_share 1, or a table's T = 0) is exact verification:
    the same draws and no hidden states asked for, so the same records from the same seed
    (before, the walk past the first rejection drew more and SH's exchange cost time)."""
    table = tmp_path / "t.json"
    table.write_text(json.dumps(TABLE))  # share 1 at T = 0 on both channels
    runs = [
        simulate(scenario_from_dict(tiny_scenario(), [*overrides, *COMMON]))
        for overrides in (
            [],
            ["verification={rule: semantic, reject_share: 1.0, upload: sh}"],
            [f"verification={{rule: semantic, table: {table}, threshold: 0, upload: sh}}"],
        )
    ]
    exact = runs[0]
    assert len(exact.rounds) > 100 and len(exact.requests) > 5
    for lossy in runs[1:]:
        assert lossy.rounds == exact.rounds
        assert lossy.requests == exact.requests and lossy.batches == exact.batches


REFUSED = (
    "config field 'verification.threshold': 0 decides nothing with reject_share 0.58 (T only "
    "picks a share from a table): give a table instead (verification.reject_share=null "
    "verification.table=gemma3-270m), or drop threshold"
)


def test_a_threshold_with_a_given_share_is_refused() -> None:
    """It used to label the run ("threshold 0") while the share decided everything."""
    with pytest.raises(ConfigError) as info:
        scenario_from_dict(tiny_scenario(), ["verification={rule: semantic, reject_share: "
                                             "0.58, threshold: 0}"])  # fmt: skip
    assert f"config field '{info.value.path}': {info.value.message}" == REFUSED


def test_sim_wisv_refuses_a_threshold_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    args = ["sim", "wisv", "verification.threshold=0", "--quiet", "--no-plots"]
    assert main([*args, "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"edgespec sim: {REFUSED}\n"
    assert not out.exists()


def test_a_tables_threshold_16_accepts_every_mismatch(tmp_path: Path) -> None:
    table = tmp_path / "t.json"
    shares = [1.0 - t / 16 for t in range(17)]  # share 0 at T = 16 on both channels
    table.write_text(json.dumps({**TABLE, "reject_share": {"poor": shares, "good": shares}}))
    verification = f"verification={{rule: semantic, table: {table}, threshold: 16}}"
    lossy = simulate(scenario_from_dict(tiny_scenario(), [verification, *COMMON]))
    assert len(lossy.rounds) > 50
    assert all(r.num_accepted == r.num_drafted for r in lossy.rounds)
