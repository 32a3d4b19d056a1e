"""Cost, acceptance and network models and the event kernel, on hand-built inputs."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from edgespec.config import ConfigError
from edgespec.hardware.cost_models import (
    LookupCost,
    RooflineCost,
    WispCost,
    available,
    decode_steps_s,
    draft_passes_s,
    load_architecture,
    load_hardware,
    load_profile,
)
from edgespec.policies.estimator import zhu_batch_flops
from edgespec.sim.kernel import EventQueue
from edgespec.sim.model.acceptance import DecayAcceptance, IidAcceptance, TraceAcceptance
from edgespec.sim.model.network import DraftRows, Link, downlink_bytes, uplink_bytes
from edgespec.sim.model.rng import UniformStream


def _stream(seed: int = 0) -> UniformStream:
    return UniformStream(np.random.default_rng(seed), block=8)


def test_every_preset_loads_and_names_its_source() -> None:
    assert len(available("models")) >= 14 and len(available("hardware")) >= 8
    for name in available("models"):
        source = load_architecture(name).source
        assert source.startswith(("https://huggingface.co/", "edgespec/data/drafts/")), name
    for name in available("hardware"):
        assert load_hardware(name).source


def test_a_preset_is_parsed_once_and_each_caller_gets_its_own_copy() -> None:
    from edgespec.hardware.presets import _parsed_preset, load_named

    first = load_named("models", "llama2-7b")
    first["num_layers"] = -1
    assert load_named("models", "llama2-7b")["num_layers"] == 32
    assert _parsed_preset.cache_info().hits >= 1
    with pytest.raises(ConfigError, match="no models preset named 'nope'"):
        load_named("models", "nope")


def test_the_bundled_draft_preset_matches_the_bundled_draft() -> None:
    from dataclasses import replace
    from pathlib import Path

    import edgespec
    from edgespec.models.trimmed import TrimmedVocabDraft
    from edgespec.profiling.draft import model_spec

    preset = load_architecture("gemma3-270m-draft")
    bundled = Path(edgespec.__file__).parent / "data" / "drafts" / "gemma3-270m-draft"
    draft = TrimmedVocabDraft.load(bundled)
    measured = model_spec(draft, preset.name)
    assert replace(measured, source=preset.source) == preset


def test_model_sizes_match_their_names() -> None:
    # Parameter counts (weights incl. embeddings) within 10% of the advertised size.
    sizes = [("qwen3-32b", 32.8), ("llama2-7b", 6.74), ("llama3-70b", 70.6)]
    sizes += [("tinyllama-1.1b", 1.1), ("qwen3-0.6b", 0.6), ("gemma3-270m", 0.27)]
    for name, billions in sizes:
        params = load_architecture(name).weight_bytes / 2 / 1e9
        assert params == pytest.approx(billions, rel=0.1), name


def test_roofline_decode_is_memory_bound_and_prefill_compute_bound() -> None:
    cost = RooflineCost(load_architecture("llama2-7b"), load_hardware("a100"))
    hw = load_hardware("a100")
    weights_s = load_architecture("llama2-7b").weight_bytes / (2039e9 * 0.7)
    one = cost.batch_time_s(1, 1, 101, 100)
    kv_s = load_architecture("llama2-7b").kv_bytes_per_token * 101 / (2039e9 * 0.7)
    assert one == pytest.approx(weights_s + kv_s + hw.overhead_s, rel=1e-12)
    big = cost.batch_time_s(1, 4000, 4000 * 4000, 0)
    flops = load_architecture("llama2-7b").flops(4000, 4000 * 4000)
    assert big == pytest.approx(flops / (312e12 * 0.5) + hw.overhead_s, rel=1e-12)


def test_wisp_profile_and_lookup_table() -> None:
    wisp = load_profile("a100-qwen3-32b")
    assert isinstance(wisp, WispCost)
    assert wisp.batch_time_s(1, 5, 2525, 500) == pytest.approx(0.0174228, abs=1e-7)
    table = load_profile("generic-cpu-gemma3-270m")
    assert isinstance(table, LookupCost)
    assert table.batch_time_s(1, 5, 0, 195) == pytest.approx(0.168)
    assert table.batch_time_s(1, 7, 0, 195) == pytest.approx((0.168 + 0.191) / 2)
    assert table.batch_time_s(8, 40, 0, 0) == pytest.approx(0.283)
    with pytest.raises(ConfigError, match="'profile': no hardware/profiles preset named 'x'"):
        load_profile("x")


def test_decode_steps_prefill_then_steps() -> None:
    cost = LookupCost((1, 10), (1.0, 10.0))  # 1 s per forwarded token
    assert decode_steps_s(cost, 3, context=7) == 3.0
    assert decode_steps_s(cost, 3, context=0, prefill=5) == 5.0 + 2.0
    assert decode_steps_s(cost, 0, context=5, prefill=5) == 0.0


class _Shapes:
    """A cost model that records the shapes it is asked about (1 s per pass)."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int, int, int]] = []

    def batch_time_s(
        self, batch_size: int, num_linear: int, num_interactions: int, num_cached: int
    ) -> float:
        self.seen.append((batch_size, num_linear, num_interactions, num_cached))
        return 1.0


def test_decode_steps_shapes() -> None:
    # step s forwards 1 token on context + s cached ones, attending to all of them
    cost = _Shapes()
    assert decode_steps_s(cost, 3, context=7) == 3.0
    assert cost.seen == [(1, 1, 8, 7), (1, 1, 9, 8), (1, 1, 10, 9)]
    cost.seen.clear()
    assert decode_steps_s(cost, 2, context=0, prefill=5) == 2.0
    assert cost.seen == [(1, 5, 25, 0), (1, 1, 7, 6)]


def test_draft_passes_batch_the_entries_still_drafting() -> None:
    cost = _Shapes()
    # (context 7, all unseen, γ 2) and (context 9, seen, γ 3): 3 passes; the first
    # forwards 7 tokens on 0 cached and 1 on 9; the third only the second entry's.
    assert draft_passes_s(cost, [(7, 7, 2), (9, 0, 3)]) == 3.0
    assert cost.seen == [(2, 8, 7 * 7 + 10, 9), (2, 2, 9 + 11, 8 + 10), (1, 1, 12, 11)]
    cost.seen.clear()
    assert draft_passes_s(cost, [(12, 5, 2)]) == 2.0  # catching up on 5 tokens
    assert cost.seen == [(1, 5, 12 * 5, 7), (1, 1, 14, 13)]
    assert draft_passes_s(cost, []) == 0.0 and draft_passes_s(cost, [(9, 0, 0)]) == 0.0


@pytest.mark.parametrize("hardware", ["a100", "jetson-orin"])
def test_one_draft_entry_costs_what_decode_steps_cost(hardware: str) -> None:
    cost = RooflineCost(load_architecture("qwen3-0.6b"), load_hardware(hardware))
    for context, gamma in [(40, 1), (300, 4), (77, 9)]:
        assert draft_passes_s(cost, [(context, 0, gamma)]) == decode_steps_s(cost, gamma, context)
        prefill = decode_steps_s(cost, gamma, context, prefill=context)
        assert draft_passes_s(cost, [(context, context, gamma)]) == prefill


def test_trace_acceptance_takes_the_run_of_ones_from_the_position() -> None:
    model = TraceAcceptance()
    seq = (1, 1, 0, 1, 1, 1)
    rng = _stream()
    assert [model.accepted(seq, p, 4, rng) for p in range(6)] == [2, 1, 0, 4, 4, 3]  # wraps around
    assert model.accepted(seq, 3, 2, rng) == 2
    assert TraceAcceptance(((1,), (0,))).seq_for(3) == (0,)


def test_iid_and_decay_acceptance_statistics() -> None:
    rng = _stream(1)
    iid = IidAcceptance(0.6)
    draws = [iid.accepted(None, 0, 4, rng) for _ in range(40000)]
    expected = sum(0.6**k for k in range(1, 5))  # E[L] = Σ_{k=1..γ} α^k
    assert np.mean(draws) == pytest.approx(expected, rel=0.02)
    decay = DecayAcceptance((1.0, 1.0, 0.0))
    assert {decay.accepted(None, 0, 5, rng) for _ in range(100)} == {2}
    assert IidAcceptance(1.0).accepted(None, 0, 7, rng) == 7


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: IidAcceptance(-0.1), "alpha must be in [0, 1], got -0.1"),
        (lambda: IidAcceptance(1.5), "alpha must be in [0, 1], got 1.5"),
        (lambda: DecayAcceptance(()), "decay acceptance needs at least one rate"),
        (lambda: DecayAcceptance((0.5, -0.1)), "rates[1] must be in [0, 1], got -0.1"),
        (lambda: DecayAcceptance((1.2,)), "rates[0] must be in [0, 1], got 1.2"),
        (lambda: TraceAcceptance().seq_for(0), "request has no acceptance_seq and no pool"),
        (
            lambda: TraceAcceptance().accepted((), 0, 2, _stream()),
            "trace acceptance needs a non-empty acceptance_seq",
        ),
    ],
)
def test_acceptance_refuses_out_of_range_inputs(build: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError) as info:
        build()
    assert message in str(info.value)


def test_acceptance_at_the_ends_of_the_range() -> None:
    rng = _stream(3)
    assert [IidAcceptance(0.0).accepted(None, 0, 4, rng) for _ in range(20)] == [0] * 20
    assert DecayAcceptance((0.0,)).accepted(None, 0, 4, rng) == 0
    assert DecayAcceptance((1.0,)).accepted(None, 0, 9, rng) == 9  # the last rate repeats


_LOSS_RANGE = (
    "must be in [0, 0.99] (each message is resent until it arrives, 1/(1 - loss_rate) "
    "attempts on average), got "
)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ((-0.01, 0.0, 1e6, 0.0, 0.2), "rtt, jitter and retransmit timeout must be >= 0"),
        ((0.02, -0.01, 1e6, 0.0, 0.2), "rtt, jitter and retransmit timeout must be >= 0"),
        ((0.02, 0.0, 1e6, 0.0, -0.2), "rtt, jitter and retransmit timeout must be >= 0"),
        ((0.02, 0.0, 0.0, 0.0, 0.2), "bandwidth must be > 0"),
        ((0.02, 0.0, 1e6, 1.0, 0.2), f"loss_rate {_LOSS_RANGE}1.0"),
        ((0.02, 0.0, 1e6, -0.1, 0.2), f"loss_rate {_LOSS_RANGE}-0.1"),
        ((0.02, 0.0, 1e6, 0.999999999, 0.2), f"loss_rate {_LOSS_RANGE}0.999999999"),
    ],
)
def test_link_refuses_out_of_range_fields(
    fields: tuple[float, float, float, float, float], message: str
) -> None:
    with pytest.raises(ValueError) as info:
        Link(*fields)
    assert str(info.value) == message


def test_a_link_without_jitter_or_loss_draws_nothing() -> None:
    # the fast path (batchend.py) inlines latency_s and relies on this: same draws
    rng, fresh = _stream(4), _stream(4)
    assert Link(0.02, 0.0, 1e6, 0.0, 0.2).latency_s(100, rng) == 0.01 + 100 / 1e6
    assert rng.next() == fresh.next()


def test_link_latency_exact_and_with_loss() -> None:
    link = Link(0.02, 0.0, 1e6, 0.0, 0.2)
    assert link.latency_s(uplink_bytes(4, 10, 32000, None), _stream()) == pytest.approx(
        0.01 + (64 + 4 * 14) / 1e6
    )
    assert uplink_bytes(4, 0, 32000, DraftRows("dense")) == 64 + 16 + 2 * 4 * 32000
    assert downlink_bytes(3) == 64 + 16
    lossy = Link(0.02, 0.0, 1e9, 0.5, 0.2)
    rng = _stream(2)
    mean = np.mean([lossy.latency_s(0, rng) for _ in range(20000)])
    assert mean == pytest.approx(0.01 + 0.2 * 1.0, rel=0.03)  # E[retries] = p/(1-p) = 1
    jittery = Link(0.0, 0.005, 1e9, 0.0, 0.0)
    assert np.mean([jittery.latency_s(0, rng) for _ in range(20000)]) == pytest.approx(
        0.005, rel=0.03
    )


@pytest.mark.parametrize("block", [1, 3, 128])
def test_uniform_stream_blocks_do_not_change_values(block: int) -> None:
    a = UniformStream(np.random.default_rng(5), block=block)
    b = np.random.default_rng(5)
    assert [a.next() for _ in range(300)] == [float(b.random()) for _ in range(300)]


def test_uniform_stream_refuses_an_empty_block() -> None:
    with pytest.raises(ValueError, match="a stream's block must be at least 1 draw, got 0"):
        UniformStream(np.random.default_rng(5), block=0)


def test_kernel_orders_by_time_then_kind_then_entity_then_insertion() -> None:
    seen: list[tuple[float, str]] = []
    q = EventQueue()
    handlers = [lambda t, p: seen.append((t, f"k0:{p}")), lambda t, p: seen.append((t, f"k1:{p}"))]
    q.push(1.0, 1, 5, "a")
    q.push(1.0, 0, 9, "b")
    q.push(1.0, 1, 2, "c")
    q.push(0.5, 1, 0, "d")
    q.push(1.0, 1, 2, "e")
    q.push(3.0, 0, 0, "late")
    q.run(handlers, until_s=2.0)
    assert seen == [(0.5, "k1:d"), (1.0, "k0:b"), (1.0, "k1:c"), (1.0, "k1:e"), (1.0, "k1:a")]
    assert len(q) == 1 and q.num_events == 5
    with pytest.raises(ValueError, match="scheduled in the past"):
        q.push(0.9, 0, 0, None)
    assert math.isclose(q.now_s, 1.0)


def test_zhu_profile_is_eq17_over_zhus_printed_flops() -> None:
    # Table II's verifier coefficients over Eqs. 13-14 (two-matrix FFN, no LM head).
    cost = load_profile("rtx4500-llama2-7b-zhu")
    flops = zhu_batch_flops(32, 4096, 11008, 5, 5 * 300)
    assert cost.batch_time_s(1, 5, 5 * 300, 295) == pytest.approx(2.08e-14 * flops + 1.28e-2)
