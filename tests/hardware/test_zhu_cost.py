"""Zhu et al.'s cost model as printed: Eqs. 13–14's FLOPs summed over a batch, Eq. 17 with
Table II's coefficients, the bundled Table II profiles, the ``flops`` option and the
``flops: architecture`` that ``edgespec profile`` writes. Numbers computed by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from edgespec.config import ConfigError, as_written
from edgespec.hardware.cost_models import ZhuCost, load_architecture, load_profile
from edgespec.policies.estimator import (
    forward_flops,
    zhu_batch_flops,
    zhu_decode_flops,
    zhu_runtime_s,
)
from edgespec.profiling.fit import WISP_TERMS, ZHU_TERMS, FitMetrics, LinearFit
from edgespec.profiling.run import DraftProfile, ProfileResult, write_profiles

C1_V, C2_V = 2.08e-14, 1.28e-2  # Table II, verifier (RTX 4500)
C1_D, C2_D = 4.11e-13, 0.56e-3  # Table II, drafter (RTX 3080)


def test_printed_flops_of_one_decode_token_on_llama2_7b() -> None:
    # J = 32, h1 = 4096, h2 = 11008; 1 new token over 99 cached: N_lin = 1, N_int = 100.
    # 8·h1² = 134,217,728; 4·h1·h2 = 180,355,072; 4·h1·100 = 1,638,400
    # 32·(134,217,728 + 180,355,072 + 1,638,400) = 32·316,211,200
    flops = zhu_batch_flops(32, 4096, 11008, 1, 100)
    assert flops == 10_118_758_400
    assert flops == forward_flops(32, 4096, 11008, 1, 99) == zhu_decode_flops(32, 4096, 11008, 99)


def test_printed_flops_of_a_batch_are_the_sum_of_its_tasks() -> None:
    # two tasks: 3 new over 5 cached, 1 new over 10: N_lin = 4, N_int = 8·3 + 11·1 = 35
    batch = zhu_batch_flops(2, 8, 16, 4, 35)
    assert batch == forward_flops(2, 8, 16, 3, 5) + forward_flops(2, 8, 16, 1, 10)
    # 2·((8·64 + 4·8·16)·4 + 4·8·35) = 2·(1024·4 + 1120)
    assert batch == 10_432


def test_fig5_point_with_table2_verifier_coefficients() -> None:
    # 1.31 TFLOPs per task, 48 tasks: 2.08e-14·1.31e12·48 + 0.0128 = 1.307904 + 0.0128
    assert zhu_runtime_s(C1_V, C2_V, 1.31e12, 48) == pytest.approx(1.320704, rel=1e-12)


def test_bundled_verifier_profile_times_a_batch_of_prefills() -> None:
    # 48 tasks each prefilling 128 tokens on LLaMA-7B (≈ Fig. 5's 1.31 TFLOPs × 48):
    # per task 4·32·4096·128·(2·4096 + 128 + 11008) = 67,108,864·19,328 = 1,297,080,123,392
    cost = load_profile("rtx4500-llama2-7b-zhu")
    per_task = 1_297_080_123_392
    assert zhu_batch_flops(32, 4096, 11008, 48 * 128, 48 * 128 * 128) == 48 * per_task
    # 2.08e-14·62,259,845,922,816 + 0.0128 = 1.2950048 + 0.0128
    time_s = cost.batch_time_s(48, 48 * 128, 48 * 128 * 128, 0)
    assert time_s == pytest.approx(1.3078048, rel=1e-7)


def test_bundled_drafter_profile_times_one_draft_pass() -> None:
    # TinyLlama: J = 22, h1 = 2048, h2 = 5632; one token over 511 cached (N_int = 512):
    # 22·(33,554,432 + 46,137,344) + 4·22·2048·512 = 1,753,219,072 + 92,274,688
    cost = load_profile("rtx3080-tinyllama-1.1b-zhu")
    assert zhu_batch_flops(22, 2048, 5632, 1, 512) == 1_845_493_760
    # 4.11e-13·1,845,493,760 + 0.56e-3 = 7.5849794e-4 + 5.6e-4
    assert cost.batch_time_s(1, 1, 512, 511) == pytest.approx(1.31849794e-3, rel=1e-7)
    # LLaMA-68M: J = 2, h1 = 768, h2 = 3072: 2·(4,718,592 + 9,437,184) + 4·2·768·10
    small = load_profile("rtx3080-llama-68m-zhu")
    assert small.batch_time_s(1, 1, 10, 9) == pytest.approx(
        C1_D * (28_311_552 + 61_440) + C2_D, rel=1e-12
    )


@pytest.mark.parametrize(
    ("name", "model", "c1", "c2"),
    [
        ("rtx4500-llama2-7b-zhu", "llama2-7b", 2.08e-14, 1.28e-2),
        ("rtx4500-llama2-13b-zhu", "llama2-13b", 2.08e-14, 1.28e-2),
        ("rtx3080-llama-68m-zhu", "llama-68m", 4.11e-13, 5.6e-4),
        ("rtx3080-tinyllama-1.1b-zhu", "tinyllama-1.1b", 4.11e-13, 5.6e-4),
    ],
)
def test_bundled_profiles_carry_table2(name: str, model: str, c1: float, c2: float) -> None:
    cost = load_profile(name)
    assert cost == ZhuCost(load_architecture(model), c1, c2, "printed")


def test_table1_dimensions_of_the_profiles_models() -> None:
    dims = {
        name: (a.num_layers, a.hidden_size, a.ffn_size)
        for name in ("llama-68m", "tinyllama-1.1b", "llama2-7b", "llama2-13b")
        for a in [load_architecture(name)]
    }
    assert dims == {
        "llama-68m": (2, 768, 3072),
        "tinyllama-1.1b": (22, 2048, 5632),
        "llama2-7b": (32, 4096, 11008),
        "llama2-13b": (40, 5120, 13824),
    }


def _profile(tmp_path: Path, data: dict[str, object]) -> str:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_architecture_flops_option(tmp_path: Path) -> None:
    data: dict[str, object] = {"kind": "zhu", "model": "llama2-7b", "c1_s_per_flop": C1_V}
    data["c2_s"] = C2_V
    printed = load_profile(_profile(tmp_path, data))
    architecture = load_profile(_profile(tmp_path, {**data, "flops": "architecture"}))
    assert isinstance(printed, ZhuCost) and printed.flops == "printed"
    assert isinstance(architecture, ZhuCost) and architecture.flops == "architecture"
    # gated 3-matrix FFN and the LM head: per layer 4096·4·4096 + 3·4096·11008 = 202,375,168
    # params, so 2·32·202,375,168 + 2·4096·32000 + 4·32·32·128·100 = 13,266,583,552 FLOPs
    assert architecture.batch_time_s(1, 1, 100, 99) == pytest.approx(
        C1_V * 13_266_583_552 + C2_V, rel=1e-12
    )
    assert printed.batch_time_s(1, 1, 100, 99) == pytest.approx(
        C1_V * 10_118_758_400 + C2_V, rel=1e-12
    )
    # the class on its own keeps the architecture FLOPs (what `edgespec profile` fits)
    assert ZhuCost(architecture.model, C1_V, C2_V) == architecture


@pytest.mark.parametrize("flops", ["gated", 1, None])
def test_a_bad_flops_field_names_the_file(tmp_path: Path, flops: object) -> None:
    data = {"kind": "zhu", "model": "llama2-7b", "c1_s_per_flop": C1_V, "c2_s": C2_V}
    path = _profile(tmp_path, {**data, "flops": flops})
    with pytest.raises(ConfigError) as info:
        load_profile(path)
    assert str(info.value) == (
        f"config field '{path}.flops': must be 'printed' or 'architecture', got {as_written(flops)}"
    )


def test_zhu_cost_refuses_an_unknown_flops() -> None:
    with pytest.raises(ValueError) as info:
        ZhuCost(load_architecture("llama-68m"), C1_D, C2_D, "gated")  # type: ignore[arg-type]
    assert str(info.value) == (
        "ZhuCost.flops must be one of ('printed', 'architecture'), got 'gated'"
    )


def _fit(names: tuple[str, ...], values: tuple[float, ...]) -> LinearFit:
    metrics = FitMetrics(r2=1.0, mae_s=0.0, mape_pct=0.0, num_samples=3)
    bounds = tuple((v, v) for v in values)
    return LinearFit(names, values, bounds, metrics, metrics, ((1.0, 1.0),) * 3)


def test_edgespec_profile_writes_architecture_zhu_profiles(tmp_path: Path) -> None:
    zhu = _fit(ZHU_TERMS, (3e-12, 0.004))
    result = ProfileResult(
        target="gemma3-270m",
        grid=(),
        samples=(),
        num_prompts=0,
        wisp=_fit(WISP_TERMS, (1e-4, 1e-8, 1e-6, 0.01)),
        zhu=zhu,
        draft=DraftProfile("gemma3-270m-draft", (), _fit(WISP_TERMS, (1e-4, 0, 0, 0)), zhu, 0.1),
        hardware="cpu",
        load_average=(0.0, 0.0, 0.0),
    )
    paths = write_profiles(result, tmp_path / "g.yaml", "cmd")
    names = ["g.yaml", "g-zhu.yaml", "g-draft.yaml", "g-draft-zhu.yaml", "g-report.json"]
    assert [p.name for p in paths] == names
    for name, model in (("g-zhu.yaml", "gemma3-270m"), ("g-draft-zhu.yaml", "gemma3-270m-draft")):
        assert yaml.safe_load((tmp_path / name).read_text())["flops"] == "architecture"
        cost = load_profile(str(tmp_path / name))
        assert cost == ZhuCost(load_architecture(model), 3e-12, 0.004, "architecture")
