"""Semantic (lossy) verification in the simulator (edgespec/sim/model/semantic.py): the
decision head's effect on a round, the scenario section's errors, the hidden states FH and
SH put on the link, and what a run reports (its reject-share table:
test_semantic_table.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from edgespec.cli import main
from edgespec.config import ConfigError
from edgespec.core.types import RoundRecord
from edgespec.sim.model.acceptance import IidAcceptance
from edgespec.sim.model.rng import UniformStream
from edgespec.sim.model.semantic import (
    RejectShareTable,
    expected_committed,
    semantic_round,
)
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import SimResult, simulate
from tests.sim.helpers import hand_trace_scenario, tiny_scenario
from tests.sim.test_tree_trace_modes import ROW as TREE_ROW


def _stream(seed: int = 0) -> UniformStream:
    return UniformStream(np.random.Generator(np.random.PCG64(seed)))


def test_iid_rounds_commit_what_the_continuation_probability_gives() -> None:
    alpha, share, gamma = 0.7, 0.4, 6
    base, rng = IidAcceptance(alpha), _stream(3)
    n = 40_000
    committed = [semantic_round(base, None, 0, gamma, rng, share)[0] + 1 for _ in range(n)]
    expected = expected_committed(alpha, share, gamma)
    assert np.mean(committed) == pytest.approx(expected, rel=0.01)
    exact = [semantic_round(base, None, 0, gamma, rng, 1.0)[0] + 1 for _ in range(n)]
    assert np.mean(exact) == pytest.approx(expected_committed(alpha, 1.0, gamma), rel=0.01)
    assert expected_committed(alpha, 1.0, gamma) == pytest.approx((1 - alpha**7) / (1 - alpha))
    assert expected_committed(0.5, 0.0, 4) == 5.0  # every mismatch accepted: γ + 1


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        (["verification={rule: exact, threshold: 12}"], "verification.threshold",
         "applies only to rule: semantic"),
        (["verification.rule=semantic"], "verification", "needs exactly one of reject_share"),
        (["verification={rule: semantic, reject_share: 0.5, table: x}"], "verification",
         "needs exactly one of"),
        (["verification={rule: semantic, reject_share: 0.5, threshold: 17}"],
         "verification.threshold", "must be in [0, 16], got 17"),
        (["verification={rule: semantic, reject_share: 1.5}"], "verification.reject_share",
         "must be in [0, 1]"),
        (["verification={rule: semantic, reject_share: 0.5, draft_hidden: 0}"],
         "verification.draft_hidden", "must be >= 1"),
        (["verification={rule: semantic, reject_share: 0.5, upload: both}"],
         "verification.upload", "must be one of"),
        (["verification={rule: lossy}"], "verification.rule", "must be one of"),
        (["temperature=0.7", "verification={rule: semantic, reject_share: 0.5}"],
         "verification.rule", "needs temperature 0"),
        (["mode=centralized", "verification={rule: semantic, reject_share: 0.5}"],
         "verification.rule", "mode is centralized"),
        (["stop_predictor={confusion_tpr: 0.9, confusion_fpr: 0.1}",
          "verification={rule: semantic, reject_share: 0.5}"],
         "verification.rule", "stop predictor"),
    ],
)  # fmt: skip
def test_the_section_is_validated_once_with_the_field(
    overrides: list[str], field: str, message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        scenario_from_dict(tiny_scenario(), overrides)
    assert info.value.path == field
    assert message in info.value.message


def test_token_tree_workloads_are_refused(tmp_path: Path) -> None:
    data = hand_trace_scenario(tmp_path, [TREE_ROW], gamma=3)
    data["verification"] = {"rule": "semantic", "reject_share": 0.5}
    with pytest.raises(ConfigError, match="captured token-tree rounds"):
        simulate(scenario_from_dict(data))


ROW = {"request_id": "r0", "arrival_ms": 0.0, "prompt_tokens": 4, "output_tokens": 9,
       "drafter_id": 0, "acceptance_seq": [1, 0, 1, 1, 0, 1, 1, 1, 1]}  # fmt: skip
"""Mismatches at output positions 1 and 4."""


def _rounds(tmp_path: Path, verification: dict[str, Any] | None) -> tuple[RoundRecord, ...]:
    data = hand_trace_scenario(tmp_path, [ROW], gamma=4)
    if verification is not None:
        data["verification"] = verification
    result = simulate(scenario_from_dict(data))
    return result.rounds


def test_fh_and_sh_put_the_hidden_states_on_the_link(tmp_path: Path) -> None:
    """RTT 20 ms, 1e6 bytes/s, no jitter or loss (hand_trace_scenario); d_h = 100."""
    exact = _rounds(tmp_path, None)
    semantic = {"rule": "semantic", "reject_share": 0.7, "draft_hidden": 100}
    fh = _rounds(tmp_path, {**semantic, "upload": "fh"})
    sh = _rounds(tmp_path, {**semantic, "upload": "sh"})
    # This seed's head rejects both mismatches: exact verification's rounds, token for token.
    outcome = [(r.num_drafted, r.num_accepted, r.num_committed) for r in exact]
    assert outcome == [(4, 1, 2), (4, 2, 3), (3, 3, 4)]
    for rounds in (fh, sh):
        assert [(r.num_drafted, r.num_accepted, r.num_committed) for r in rounds] == outcome
    # FH: the block carries 2 bytes × 100 per drafted token; nothing more comes back.
    for e, f in zip(exact, fh, strict=True):
        assert f.uplink_s - e.uplink_s == pytest.approx(e.num_drafted * 200 / 1e6, abs=1e-12)
        assert f.downlink_s == e.downlink_s
    # SH: the block as greedy SD's; rounds with a mismatch add the request (64 + 4 bytes)
    # and the mismatch's hidden state (64 + 200 bytes), each half an RTT away.
    mismatches = [1, 1, 0]
    for e, s, m in zip(exact, sh, mismatches, strict=True):
        assert s.uplink_s == e.uplink_s
        extra = (0.010 + 68 / 1e6) + (0.010 + 264 / 1e6) if m else 0.0
        assert s.downlink_s - e.downlink_s == pytest.approx(extra, abs=1e-12)
    assert sh[-1].end_s - exact[-1].end_s == pytest.approx(2 * (0.020 + 332 / 1e6), abs=1e-9)


def test_accepted_mismatches_are_committed(tmp_path: Path) -> None:
    rounds = _rounds(tmp_path, {"rule": "semantic", "reject_share": 0.0, "upload": "sh"})
    # Both mismatches accepted: 4 drafts + the bonus, then the last 4 tokens (γ capped at 3).
    assert [(r.num_drafted, r.num_accepted, r.num_committed) for r in rounds] == [
        (4, 4, 5),
        (3, 3, 4),
    ]


def test_a_semantic_run_says_it_is_lossy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "lossy.yaml"
    data = tiny_scenario(duration_s=5.0)
    data["verification"] = {"rule": "semantic", "reject_share": 0.3, "upload": "fh"}
    scenario.write_text(yaml.safe_dump(data))
    out = tmp_path / "run"
    assert main(["sim", str(scenario), "--quiet", "--no-plots", "--out", str(out)]) == 0
    written = json.loads((out / "metrics.json").read_text())
    assert written["verification"] == "semantic" and written["lossy"] is True
    assert written["threshold"] is None and written["upload"] == "fh"  # T decided nothing
    assert written["reject_share"] == 0.3 and written["table"] is None
    committed = written["num_output_tokens"] / written["num_rounds"]
    assert written["committed_per_round"] == pytest.approx(committed)
    assert written["aal"] < committed  # edgespec's AAL leaves the target's token out
    printed = capsys.readouterr().out
    assert "verification: semantic (lossy), upload fh, reject share 0.3; committed" in printed
    exact = tmp_path / "exact"
    assert main(["sim", str(scenario), "--quiet", "--no-plots", "--out", str(exact),
                 "verification={rule: exact}"]) == 0  # fmt: skip
    assert "verification" not in json.loads((exact / "metrics.json").read_text())


def test_an_exact_section_changes_nothing() -> None:
    plain = simulate(scenario_from_dict(tiny_scenario()))
    said = simulate(scenario_from_dict(tiny_scenario(), ["verification={rule: exact}"]))
    assert said.requests == plain.requests and said.batches == plain.batches
    assert said.path == plain.path  # still the fast set


def test_tables_are_frozen_values() -> None:
    table = RejectShareTable("t", (0.0, 16.0), (0.2, 0.8), ((1.0, 0.5), (1.0, 0.0)))
    assert table.share(0.5, 8.0) == pytest.approx((0.75 + 0.5) / 2)


def test_fh_and_sh_commit_the_same_tokens_from_the_same_seed() -> None:
    """SH asks for every mismatch's state, so both walk the whole block: the same draws,
    the same rounds (Table I: "SH has identical AAL/rounds"), SH slower by its exchange
    (on a link without jitter or loss, which would draw from the device's stream too)."""
    base = [
        "auto_topology.devices.0.count=1",
        "auto_topology.servers.0.count=1",
        "links.wan={rtt_ms: 30.0, bandwidth_mbps: 20.0}",
        "duration_s=60",
    ]
    runs = {
        upload: simulate(scenario_from_dict(tiny_scenario(), [
            *base, f"verification={{rule: semantic, reject_share: 0.5, upload: {upload}}}",
        ])).requests
        for upload in ("fh", "sh")
    }  # fmt: skip
    fh, sh = runs["fh"], runs["sh"]
    assert len(sh) >= 5
    for f, s in zip(fh, sh, strict=False):
        assert (f.num_rounds, f.num_accepted, f.num_output_tokens) == (
            s.num_rounds,
            s.num_accepted,
            s.num_output_tokens,
        )
    assert sum(r.network_s for r in sh) != sum(r.network_s for r in fh[: len(sh)])


def test_the_bundled_wisv_scenario() -> None:
    """Table I's setting at γ = 16 and 20 Mbit/s: the head's reject share (0.58) lifts the
    committed tokens per round from greedy's ≈8.3 towards Table I's 10.63."""
    from edgespec.sim.setup.scenario import load_scenario

    lossy = simulate(load_scenario("wisv"))
    greedy = simulate(load_scenario("wisv", ["verification={rule: exact}"]))
    assert (
        lossy.path.startswith("inlined") and "inbound refused: semantic verification" in lossy.path
    )
    assert greedy.path.startswith("fast")

    def committed(result: SimResult) -> float:
        requests = result.requests
        return sum(r.num_output_tokens for r in requests) / sum(r.num_rounds for r in requests)

    assert committed(lossy) == pytest.approx(10.63, rel=0.1)
    assert committed(greedy) == pytest.approx(8.336, rel=0.1)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("links.default.rtt_ms=2e12", "RTT must be in [0, 1e+06] s, got 2000000000.0"),
        (
            "links.default.bandwidth_mbps=1e-8",
            "uplink rate must be a finite number >= 1 bit/s, got 0.01",
        ),
    ],
)
def test_a_link_the_heads_channel_state_cannot_describe_is_a_config_error(
    override: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["sim", "wisv", "duration_s=1", override, "--quiet", "--no-plots"]
    assert main([*args, "--out", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err == (
        f"edgespec sim: config field 'links': a semantic device's link: {message}\n"
    )
