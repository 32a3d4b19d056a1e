"""The emulated link on the drafter's transport: exact delays with a fake sleep, seeded
jitter, the simulator's formulas, loopback gRPC at 30 ms RTT, and the draft command's flags."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgespec.cli import main
from edgespec.config import load_config
from edgespec.core import link_delay
from edgespec.core.types import SamplingParams, VerifyResult
from edgespec.policies.window import StaticWindow
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.edge.drafter import DraftOptions, generate
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyOutcome, VerifyReply
from edgespec.runtime.wire.emulated_link import EmulatedLinkVerifier, LinkEmulation, wrap_verifier
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from edgespec.sim.model import network
from edgespec.sim.model.rng import UniformStream
from tests.runtime.conftest import ServerFactory

PROMPT = (5, 6, 7, 8, 9)


class StubVerifier:
    """Accepts the first draft token of every block and commits it plus token 42."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def open(self, spec: SessionSpec) -> None:
        self.calls.append("open")

    def verify(self, call: VerifyCall) -> VerifyReply:
        self.calls.append("verify")
        drafted = len(call.draft_token_ids)
        accepted = call.draft_token_ids[:1]
        result = VerifyResult(drafted, len(accepted), 1 if drafted > 1 else None, 42, accepted)
        outcome = VerifyOutcome(result, (*accepted, 42), finished=False, num_forwarded=drafted)
        return VerifyReply(outcome, queue_s=0.0, verify_s=0.0, batch_size=1)

    def close(self, session_id: str) -> None:
        self.calls.append("close")


def _linked(link: LinkEmulation, seed: int = 0) -> tuple[EmulatedLinkVerifier, list[float]]:
    slept: list[float] = []
    verifier = EmulatedLinkVerifier(StubVerifier(), link, np.random.default_rng(seed), slept.append)
    return verifier, slept


def test_exact_delays_of_a_hand_built_exchange() -> None:
    # RTT 20 ms, 8 Mbit/s = 1e6 bytes/s: every byte costs 1 µs on top of the 10 ms half-RTT
    verifier, slept = _linked(LinkEmulation(rtt_ms=20.0, bandwidth_mbps=8.0))
    spec = SessionSpec("s", "c", PROMPT, SamplingParams(max_new_tokens=8))
    verifier.open(spec)  # up: 64 + 4 × 5 prompt ids = 84 bytes; down: the 64-byte header
    chain = VerifyCall("s", 5, (1, 2, 3))  # up: 64 + 4 × 3 = 76; down: 64 + 4 × (1 + 2) = 76
    probs = np.full((3, 10), 0.1, dtype=np.float32)
    stochastic = VerifyCall("s", 7, (1, 2, 3), draft_probs=probs)  # + 2 × 3 × 10 fp16 = 136
    tree = VerifyCall("s", 9, (1, 2, 3), draft_parents=(-1, 0, 0))  # + 4 × 3 parents = 88
    for call in (chain, stochastic, tree):
        assert verifier.verify(call).outcome.committed_token_ids == (1, 42)
    verifier.close("s")
    expected = [0.010084, 0.010064, 0.010076, 0.010076, 0.010136, 0.010076, 0.010088, 0.010076]
    assert slept == pytest.approx(expected, abs=1e-12)
    assert [t.method for t in verifier.transfers] == ["open", "verify", "verify", "verify"]
    assert [(t.uplink_bytes, t.downlink_bytes) for t in verifier.transfers] == [
        (84, 64),
        (76, 76),
        (136, 76),
        (88, 76),
    ]
    assert verifier.total_delay_s == pytest.approx(sum(expected))
    assert isinstance(verifier.inner, StubVerifier)
    assert verifier.inner.calls == ["open", "verify", "verify", "verify", "close"]


def test_jitter_draws_are_reproducible_by_seed() -> None:
    link = LinkEmulation(rtt_ms=10.0, jitter_ms=5.0)
    runs = []
    for seed in (3, 3, 4):
        verifier, slept = _linked(link, seed)
        for _ in range(20):
            verifier.verify(VerifyCall("s", 5, (1, 2)))
        runs.append(slept)
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]
    assert all(d >= 0.005 for d in runs[0])  # jitter only ever adds delay
    # the extra delay is exponential with the configured mean: -mean × log(1 − u)
    uniforms = np.random.default_rng(3).random(40)
    assert np.allclose(np.array(runs[0]) - 0.005, -0.005 * np.log1p(-uniforms))


def test_zero_settings_never_sleep() -> None:
    link = LinkEmulation(rtt_ms=0.0, jitter_ms=0.0, bandwidth_mbps=0.0)
    assert not link.enabled and link.bandwidth_bytes_per_s == math.inf
    verifier, slept = _linked(link)
    verifier.open(SessionSpec("s", "c", PROMPT, SamplingParams()))
    verifier.verify(VerifyCall("s", 5, (1, 2, 3)))
    assert slept == []
    stub = StubVerifier()
    assert wrap_verifier(stub, DrafterConfig()) is stub  # off by default: no wrapper at all
    wrapped = wrap_verifier(stub, DrafterConfig(link_bandwidth_mbps=1.0))
    assert isinstance(wrapped, EmulatedLinkVerifier)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"rtt_ms": -1.0}, "rtt_ms"),
        ({"jitter_ms": math.nan}, "jitter_ms"),
        ({"bandwidth_mbps": math.inf}, "bandwidth_mbps"),
    ],
)
def test_bad_settings_are_refused(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=f"{field} must be a finite number >= 0"):
        LinkEmulation(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [  # were accepted: the first round's sleep overflowed (OverflowError) or never ended
        ({"rtt_ms": 1e308}, "rtt_ms must be at most 60,000 ms, got 1e+308"),
        ({"jitter_ms": 60_000.5}, "jitter_ms must be at most 60,000 ms, got 60000.5"),
        (
            {"bandwidth_mbps": 1e-300},
            "bandwidth_mbps must be 0 (unlimited) or at least 0.001 Mbit/s, got 1e-300",
        ),
    ],
)
def test_settings_a_round_cannot_sleep_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as info:
        LinkEmulation(**kwargs)
    assert str(info.value) == message
    LinkEmulation(rtt_ms=60_000.0, jitter_ms=60_000.0, bandwidth_mbps=0.001)  # the bounds
    LinkEmulation(bandwidth_mbps=0.0)  # unlimited


def test_formulas_match_the_simulators_link() -> None:
    for args in [
        (3, 0, 100, None),
        (4, 12, 100, link_delay.DraftRows("dense"), 7),
        (5, 0, 50, None, 0, True),
    ]:
        assert link_delay.uplink_bytes(*args) == network.uplink_bytes(*args)  # type: ignore[arg-type]
    for committed in (0, 1, 9):
        assert link_delay.downlink_bytes(committed) == network.downlink_bytes(committed)
    link = network.Link(0.03, 0.004, 1.25e6, 0.0, 0.2)
    sim_stream = UniformStream(np.random.default_rng(9))
    ours = np.random.default_rng(9)
    for size in (76, 1000, 64):
        sim = link.latency_s(size, sim_stream)
        assert link_delay.one_way_delay_s(0.03, size, 1.25e6, 0.004, ours.random) == sim
    emulated = LinkEmulation(rtt_ms=30.0, jitter_ms=4.0, bandwidth_mbps=10.0)
    assert emulated.bandwidth_bytes_per_s == link.bandwidth_bytes_per_s


def test_loopback_grpc_at_30ms_rtt_stays_lossless(
    make_server: ServerFactory, target: TransformersTarget, draft_model: Any
) -> None:
    server = make_server()
    remote = RemoteVerifier(f"127.0.0.1:{server.port}")
    linked = EmulatedLinkVerifier(remote, LinkEmulation(rtt_ms=30.0), np.random.default_rng(0))
    result = generate(
        linked,
        TransformersDraft(draft_model),
        PROMPT,
        SamplingParams(max_new_tokens=12),
        DraftOptions("link-30ms"),
        StaticWindow(3),
    )
    assert result.output_token_ids == target_greedy_decode(target, PROMPT, 12)
    assert result.rounds
    for r in result.rounds:
        assert r.uplink_s + r.downlink_s >= 0.030
    assert len(linked.transfers) == 1 + len(result.rounds)  # the open, then one per round
    assert result.request.network_s >= 0.030 * len(result.rounds)


def test_draft_command_link_flags(
    make_server: ServerFactory,
    target: TransformersTarget,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = make_server()
    records = tmp_path / "new" / "rounds.jsonl"  # its folder made when written
    args = ["draft", "--server", f"127.0.0.1:{server.port}", "--draft", "ngram"]
    args += ["--prompt-ids", ",".join(map(str, PROMPT)), "--max-new-tokens", "8"]
    link = ["--link-rtt-ms", "10", "--link-jitter-ms", "1", "--link-bandwidth-mbps", "100"]
    assert main([*args, *link, "--link-seed", "3", "--records", str(records)]) == 0
    out = capsys.readouterr().out
    streamed = [int(t) for t in out.replace("[", " ").replace("]", " ").replace(",", " ").split()]
    assert streamed == list(target_greedy_decode(target, PROMPT, 8))
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    rounds = [r for r in rows if r["type"] == "RoundRecord"]
    assert rounds and all(r["uplink_s"] + r["downlink_s"] >= 0.010 for r in rounds)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--link-rtt-ms", "-5"], "--link-rtt-ms must be a finite number >= 0, got -5.0"),
        (["--link-jitter-ms", "nan"], "--link-jitter-ms must be a finite number >= 0"),
        (["--link-bandwidth-mbps", "inf"], "--link-bandwidth-mbps must be a finite number"),
        (["--link-rtt-ms", "10", "--mode", "centralized"], "needs --mode distributed"),
        (["--set", "link_jitter_ms=-2"], "config field 'link_jitter_ms': must be a finite"),
    ],
)
def test_bad_link_flags_exit_2(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["draft", "--server", "127.0.0.1:1", "--draft", "ngram", "--prompt-ids", "5,6"]
    assert main([*args, *extra]) == 2
    assert message in capsys.readouterr().err


def test_link_settings_from_the_config_file(tmp_path: Path) -> None:
    path = tmp_path / "drafter.yaml"
    path.write_text("link_rtt_ms: 30\nlink_bandwidth_mbps: 0\nlink_seed: 1\n")
    config = load_config(DrafterConfig, path)
    assert (config.link_rtt_ms, config.link_jitter_ms, config.link_bandwidth_mbps) == (30, 0, 0)
    wrapped = wrap_verifier(StubVerifier(), config)
    assert isinstance(wrapped, EmulatedLinkVerifier)
    assert wrapped.link == LinkEmulation(rtt_ms=30.0, bandwidth_mbps=0.0)
    flags = load_config(DrafterConfig, path, ["link_rtt_ms=10"])  # flags override the file
    assert flags.link_rtt_ms == 10.0
