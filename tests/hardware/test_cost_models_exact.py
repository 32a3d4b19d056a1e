"""Cost models on hand-sized inputs: the architecture's parameter, byte and FLOP counts,
the hardware and lookup-table checks, the lookup table's interpolation at its edges, Zhu's
Eq. 17 over a batch, and the profile loader's errors, all computed by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from edgespec.config import ConfigError
from edgespec.hardware.cost_models import (
    HardwareSpec,
    LookupCost,
    ModelArchitecture,
    WispCost,
    ZhuCost,
    build_cost_model,
    load_profile,
)
from edgespec.policies.estimator import WispCoefficients

# 2 layers, hidden 8, FFN 16, 4 query heads and 2 KV heads of dim 3, vocabulary 10:
# q_dim 12, kv_dim 6; attention weights 8·(2·12 + 2·6) = 288; gated FFN 3·8·16 = 384.
TINY = ModelArchitecture(
    name="tiny",
    source="hand-built",
    num_layers=2,
    hidden_size=8,
    ffn_size=16,
    num_heads=4,
    num_kv_heads=2,
    head_dim=3,
    vocab_size=10,
)


def test_architecture_counts_by_hand() -> None:
    assert TINY.linear_params_per_layer == 288 + 384
    # 2 blocks of 672 + untied embeddings 2·10·8, 2 bytes each
    assert TINY.weight_bytes == (2 * 672 + 160) * 2
    # K and V: 2 · 2 layers · 2 heads · 3 dims · 2 bytes
    assert TINY.kv_bytes_per_token == 48
    # per new token 2·(2·672) + LM head 2·8·10 = 2848; per interaction 4·2·4·3 = 96
    assert TINY.flops(5, 7) == 2848 * 5 + 96 * 7


def test_plain_ffn_and_tied_embeddings() -> None:
    from dataclasses import replace

    plain = replace(TINY, gated_ffn=False)
    assert plain.linear_params_per_layer == 288 + 2 * 8 * 16
    tied = replace(TINY, tied_embeddings=True, dtype_bytes=4)
    assert tied.weight_bytes == (2 * 672 + 80) * 4
    assert tied.kv_bytes_per_token == 96


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"peak_tflops": 0.0}, "config field 'peak_tflops': must be > 0, got 0.0"),
        ({"memory_gb": -1.0}, "config field 'memory_gb': must be > 0, got -1.0"),
        (
            {"compute_efficiency": 0.0},
            "config field 'compute_efficiency': must be in (0, 1], got 0.0",
        ),
        (
            {"memory_efficiency": 1.5},
            "config field 'memory_efficiency': must be in (0, 1], got 1.5",
        ),
    ],
)
def test_hardware_checks_name_the_field(changes: dict[str, float], message: str) -> None:
    fields = {"peak_tflops": 1.0, "memory_bandwidth_gb_s": 1.0, "memory_gb": 1.0, **changes}
    with pytest.raises(ConfigError) as info:
        HardwareSpec("hw", "hand-built", **fields).validate()
    assert str(info.value) == message
    HardwareSpec("hw", "hand-built", 1.0, 1.0, 1.0, 1.0, 1.0).validate()  # (0, 1] holds 1


def test_lookup_interpolates_extrapolates_clamps_and_adds_cached_cost() -> None:
    table = LookupCost((2, 4, 8), (1.0, 2.0, 3.0), per_cached_token_s=0.5)
    assert table.batch_time_s(1, 6, 0, 0) == 2.5  # between 4 and 8
    assert table.batch_time_s(1, 6, 0, 4) == 2.5 + 2.0  # 0.5 s per cached token
    assert table.batch_time_s(1, 1, 0, 0) == 0.5  # the first segment, extended below
    assert table.batch_time_s(1, 12, 0, 0) == 4.0  # the last segment, extended above
    steep = LookupCost((10, 20), (1.0, 3.0), per_cached_token_s=0.5)
    assert steep.batch_time_s(1, 1, 0, 2) == 0.0 + 1.0  # -0.8 s clamped to 0, then cached


@pytest.mark.parametrize(
    ("sizes", "times", "message"),
    [
        ((1,), (1.0,), "a lookup table needs >= 2 points and as many times as sizes"),
        ((1, 2), (1.0,), "a lookup table needs >= 2 points and as many times as sizes"),
        ((1, 1), (1.0, 2.0), "lookup num_linear must be strictly increasing"),
    ],
)
def test_lookup_table_checks(
    sizes: tuple[int, ...], times: tuple[float, ...], message: str
) -> None:
    with pytest.raises(ValueError, match=f"^{message}$"):
        LookupCost(sizes, times)


def test_zhu_cost_counts_the_batch_once_in_its_flops() -> None:
    # F·b is the batch's total FLOPs: Eq. 17 with b = 1 whatever the batch size
    cost = ZhuCost(TINY, c1_s_per_flop=1e-3, c2_s=0.5)
    assert cost.batch_time_s(4, 5, 7, 0) == pytest.approx(1e-3 * (2848 * 5 + 96 * 7) + 0.5)


def _profile(tmp_path: Path, name: str, data: dict[str, object]) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_a_yml_profile_loads_like_a_yaml_one(tmp_path: Path) -> None:
    coeffs = {"a_s": 0.001, "b_compute_s": 0.0, "b_read_s": 0.0001, "c_s": 0.005}
    cost = load_profile(_profile(tmp_path, "p.yml", {"kind": "wisp", **coeffs}))
    assert cost == WispCost(WispCoefficients(**coeffs))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"kind": "zhu", "c1_s_per_flop": 1e-12, "c2_s": 0.002},
            "config field '{path}.model': a zhu profile names its model preset",
        ),
        (
            {"kind": "zhu", "model": "llama2-7b", "c1_s_per_flop": -1e-12, "c2_s": 0.002},
            "config field '{path}.c1_s_per_flop': must be finite and >= 0, got -1e-12",
        ),
        (  # the field at fault is named, not always c1
            {"kind": "zhu", "model": "llama2-7b", "c1_s_per_flop": 1e-12, "c2_s": -0.002},
            "config field '{path}.c2_s': must be finite and >= 0, got -0.002",
        ),
        (
            {"kind": "table"},
            "config field '{path}.kind': must be 'wisp', 'zhu' or 'lookup', got 'table'",
        ),
    ],
)
def test_profile_errors(tmp_path: Path, data: dict[str, object], message: str) -> None:
    path = _profile(tmp_path, "p.yaml", data)
    with pytest.raises(ConfigError) as info:
        load_profile(path)
    assert str(info.value) == message.format(path=path)


def test_a_profile_cost_model_needs_its_profile() -> None:
    with pytest.raises(ConfigError) as info:
        build_cost_model("wisp", "qwen3-0.6b", "a100", None, "auto_topology.servers[0].cost_model")
    assert str(info.value) == (
        "config field 'auto_topology.servers[0].cost_model.profile': "
        "cost model 'wisp' needs a profile"
    )


@pytest.mark.parametrize(
    ("kind", "profile", "found"),
    [
        ("zhu", "a100-qwen3-32b", "wisp"),
        ("wisp", "rtx4500-llama2-7b-zhu", "zhu"),
        ("wisp", "generic-cpu-gemma3-270m", "lookup"),
    ],
)
def test_a_profile_of_another_kind_than_the_cost_models_is_refused(
    kind: str, profile: str, found: str
) -> None:
    """A ``kind: zhu`` cost model beside a wisp profile ran as the wisp profile."""
    where = "auto_topology.devices[1].cost_model"
    with pytest.raises(ConfigError) as info:
        build_cost_model(kind, "qwen3-0.6b", "a100", profile, where)
    assert str(info.value) == (
        f"config field '{where}.kind': {profile!r} is a {found!r} profile, not a {kind!r} one; "
        f"give kind: {found}, or a {kind!r} profile"
    )
    assert isinstance(build_cost_model(found, "qwen3-0.6b", "a100", profile, where), object)
