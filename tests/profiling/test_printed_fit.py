"""``edgespec profile`` also fits Eq. 17 against Zhu's printed FLOPs (Eqs. 13-14, the
pipeline model's :meth:`ModelDims.flops`) from the same samples, and writes it as
``NAME-zhu-printed.yaml`` and ``NAME-draft-zhu-printed.yaml``, which a ``pipeline:``
scenario takes as its ``verify_profile`` and ``draft_profile``. Was: only the
architecture-FLOPs files were written, and every pipeline scenario refused them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from edgespec.hardware.cost_models import load_architecture, load_profile
from edgespec.hardware.drafting_plan import PipelineSystem, build_costs
from edgespec.hardware.drafting_server import model_dims
from edgespec.policies.drafting_server.costs import ModelDims
from edgespec.policies.estimator import BatchShape
from edgespec.profiling.draft import DraftSample, pass_shapes
from edgespec.profiling.grid import QUICK_GRID, GridConfig, design_grid
from edgespec.profiling.measure import Sample
from edgespec.profiling.pair_fit import DraftProfile, fit_draft, fit_target, fit_target_zhu
from edgespec.profiling.run import ProfileResult, write_profiles
from edgespec.profiling.summary import print_summary

TARGET = load_architecture("gemma3-270m")
DRAFT = load_architecture("gemma3-270m-draft")
C1_S_PER_FLOP, C2_S = 2e-12, 0.03  # the target's printed-FLOPs Eq. 17
C1_D_S_PER_FLOP, C2_D_S = 5e-12, 0.004  # the drafter's, per pass


def _printed_flops(dims: ModelDims, entries: list[tuple[int, int]]) -> float:
    """Σ over a pass's requests of the pipeline model's per-task FLOPs."""
    return sum(float(dims.flops(new, cached)) for new, cached in entries)


def _target_samples() -> tuple[list[Sample], list[GridConfig]]:
    grid = design_grid(QUICK_GRID)
    dims = model_dims(TARGET)
    samples = []
    for index, config in enumerate(grid):
        flops = _printed_flops(dims, list(config.entries))
        samples.append(Sample(index, 0, config.entries, C1_S_PER_FLOP * flops + C2_S))
    return samples, list(grid)


def _draft_samples() -> list[DraftSample]:
    dims = model_dims(DRAFT)
    out = []
    for context in (16, 40, 64, 100, 160, 256):
        for kind, new, cached in (("cold", context, 0), ("follow_up", 1, context)):
            passes = pass_shapes(new, cached, 4)
            time_s = sum(C1_D_S_PER_FLOP * _printed_flops(dims, [p]) + C2_D_S for p in passes)
            out.append(DraftSample(kind, context, 4, BatchShape.of(passes), 4, time_s))
    return out


def test_the_printed_fit_recovers_eq_17_over_the_pipeline_models_flops() -> None:
    samples, grid = _target_samples()
    fit = fit_target_zhu(samples, grid, TARGET, 0, 20, "printed")
    assert fit.values == pytest.approx((C1_S_PER_FLOP, C2_S), rel=1e-9)
    assert fit.clipped == () and fit.test.mae_s == pytest.approx(0.0, abs=1e-12)
    _, architecture = fit_target(samples, grid, TARGET, 0, 20)
    assert architecture.values[0] != pytest.approx(C1_S_PER_FLOP, rel=1e-3)  # other FLOPs
    draft = fit_draft("gemma3-270m-draft", _draft_samples(), DRAFT, 2, 20)
    assert draft.zhu_printed is not None and draft.zhu is not None
    assert draft.zhu_printed.values == pytest.approx((C1_D_S_PER_FLOP, C2_D_S), rel=1e-9)


def _result() -> ProfileResult:
    samples, grid = _target_samples()
    wisp, zhu = fit_target(samples, grid, TARGET, 0, 20)
    printed = fit_target_zhu(samples, grid, TARGET, 0, 20, "printed")
    draft = fit_draft("gemma3-270m-draft", _draft_samples(), DRAFT, 2, 20)
    result = ProfileResult(
        "gemma3-270m", tuple(grid), tuple(samples), 0, wisp, zhu, draft, "cpu",
        (0.0, 0.0, 0.0), "wall", printed,
    )  # fmt: skip
    return result


def _written(tmp_path: Path) -> list[Path]:
    return write_profiles(_result(), tmp_path / "g.yaml", "edgespec profile x")


def test_profile_writes_the_printed_fits_a_pipeline_scenario_takes(tmp_path: Path) -> None:
    paths = _written(tmp_path)
    assert [p.name for p in paths] == [
        "g.yaml", "g-zhu.yaml", "g-zhu-printed.yaml", "g-draft.yaml", "g-draft-zhu.yaml",
        "g-draft-zhu-printed.yaml", "g-report.json",
    ]  # fmt: skip
    for name, role, model in (
        ("g-zhu-printed.yaml", "target", "gemma3-270m"),
        ("g-draft-zhu-printed.yaml", "draft", "gemma3-270m-draft"),
    ):
        data = yaml.safe_load((tmp_path / name).read_text())
        assert {k: data[k] for k in ("kind", "role", "model", "flops")} == {
            "kind": "zhu", "role": role, "model": model, "flops": "printed",
        }  # fmt: skip
        assert data["source"] == (
            f"edgespec profile ({'drafter' if role == 'draft' else role} {model}, "
            "zhu, printed FLOPs; see comments)"
        )
    assert yaml.safe_load((tmp_path / "g-zhu.yaml").read_text())["flops"] == "architecture"
    costs = build_costs(
        PipelineSystem(
            draft_profile=str(tmp_path / "g-draft-zhu-printed.yaml"),
            verify_profile=str(tmp_path / "g-zhu-printed.yaml"),
        )
    )
    assert (costs.draft, costs.verify) == (model_dims(DRAFT), model_dims(TARGET))
    for stage, (c1, c2) in (
        (costs.verify_stage, (C1_S_PER_FLOP, C2_S)),
        (costs.draft_stage, (C1_D_S_PER_FLOP, C2_D_S)),
    ):
        assert (stage.c1_s_per_flop, stage.c2_s) == pytest.approx((c1, c2), rel=1e-9)
    report = json.loads((tmp_path / "g-report.json").read_text())
    written = yaml.safe_load((tmp_path / "g-zhu-printed.yaml").read_text())
    assert report["zhu_printed"]["coefficients"] == {
        "c1_s_per_flop": written["c1_s_per_flop"], "c2_s": written["c2_s"],
    }  # fmt: skip
    assert report["draft"]["zhu_printed"]["coefficients"]["c2_s"] == pytest.approx(C2_D_S)


def test_a_printed_profile_prices_a_pass_as_the_pipeline_model_does(tmp_path: Path) -> None:
    """The fleet simulator's reading of the printed file (``ZhuCost``, ``flops: printed``)
    and the pipeline model's agree on a pass: c1·Σ ModelDims.flops + c2."""
    _written(tmp_path)
    cost = load_profile(str(tmp_path / "g-zhu-printed.yaml"))
    entries = [(5, 30), (1, 90)]
    shape = BatchShape.of(entries)
    expected = C1_S_PER_FLOP * _printed_flops(model_dims(TARGET), entries) + C2_S
    got = cost.batch_time_s(2, shape.num_linear, shape.num_interactions, shape.num_cached)
    assert got == pytest.approx(expected, rel=1e-9)


def test_a_profile_without_a_printed_fit_removes_an_earlier_one(tmp_path: Path) -> None:
    (tmp_path / "g-zhu-printed.yaml").write_text("earlier")
    (tmp_path / "g-draft-zhu-printed.yaml").write_text("earlier")
    samples, grid = _target_samples()
    wisp, zhu = fit_target(samples, grid, TARGET, 0, 20)
    draft = DraftProfile("gemma3-270m-draft", (), wisp, zhu, 0.1)
    result = ProfileResult("gemma3-270m", (), (), 0, wisp, zhu, draft, "cpu", (0.0, 0.0, 0.0))
    names = [p.name for p in write_profiles(result, tmp_path / "g.yaml", "cmd")]
    assert names == ["g.yaml", "g-zhu.yaml", "g-draft.yaml", "g-draft-zhu.yaml", "g-report.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)


def test_the_summary_shows_the_printed_fits_as_the_others(tmp_path: Path) -> None:
    """Was: the table had the architecture-FLOPs fits only, the printed ones' files named
    below it with nothing said of their fits."""
    result = _result()
    paths = write_profiles(result, tmp_path / "g.yaml", "edgespec profile x")
    printed = io.StringIO()
    print_summary(Console(file=printed, width=240, markup=False), result, paths)
    lines = printed.getvalue().splitlines()
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in lines]
    labels = [row[0] for row in cells if row and row[0]]
    assert labels == [
        "target WISP Eq. 19", "target Zhu Eq. 17", "target Zhu Eq. 17 (printed FLOPs)",
        "draft gemma3-270m-draft WISP", "draft gemma3-270m-draft Zhu",
        "draft gemma3-270m-draft Zhu (printed FLOPs)",
    ]  # fmt: skip
    assert result.draft is not None and result.draft.zhu_printed is not None
    for label, fit in (
        ("target Zhu Eq. 17 (printed FLOPs)", result.zhu_printed),
        ("draft gemma3-270m-draft Zhu (printed FLOPs)", result.draft.zhu_printed),
    ):
        assert fit is not None
        at = next(i for i, row in enumerate(cells) if row and row[0] == label)
        shown = [row[1:3] for row in cells[at : at + 2]]
        assert shown == [[n, f"{v:.3e}"] for n, v in zip(fit.names, fit.values, strict=True)]
    wrote = [line for line in lines if line.startswith("wrote ")]
    assert wrote == [f"wrote {p}" for p in paths]
