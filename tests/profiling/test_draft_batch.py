"""``edgespec profile --draft MODEL`` times the drafter batched, as the drafting server's
:class:`~edgespec.runtime.edge.batched_draft.BatchedDraftModel` drafts for b sessions at
once, fits its Eq. 17 over those calls (each pass's FLOPs the sum over its rows) and says
so in ``measured_max_batch_size``. Was: only single-session propose calls were timed, the
draft zhu profiles said ``measured_max_batch_size: 1``, and every plan with b > 1 was
told it extrapolated."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

from edgespec.hardware.cost_models import load_architecture
from edgespec.hardware.drafting_plan import PipelineSystem, plan_range_warnings
from edgespec.hardware.drafting_server import model_dims
from edgespec.policies.drafting_server.planner import PipelinePlan
from edgespec.policies.estimator import BatchShape
from edgespec.profiling.draft import DraftSample, pass_shapes
from edgespec.profiling.draft_batch import batch_cells, measure_batched
from edgespec.profiling.grid import QUICK_GRID, design_grid
from edgespec.profiling.measure import Sample
from edgespec.profiling.pair_fit import fit_draft, fit_target, fit_target_zhu
from edgespec.profiling.run import ProfileResult, write_profiles
from edgespec.runtime.testing import layer_truncated_copy, tiny_llama

DRAFT = load_architecture("gemma3-270m-draft")
TARGET = load_architecture("gemma3-270m")
C1_S_PER_FLOP, C2_S = 4e-12, 0.003  # the drafter's batched Eq. 17, per pass
EXTRAPOLATED = "its times there are extrapolated; profile a grid that covers them"


def test_batched_calls_are_timed_per_batch_size_with_every_rows_passes() -> None:
    torch.set_num_threads(1)
    draft = layer_truncated_copy(tiny_llama(0, num_layers=2, hidden_size=32), 1)
    cells = batch_cells((1, 2, 4), (8, 16))
    measured: list[tuple[int, int]] = []
    samples = measure_batched(draft, 64, cells, 3, 2, 1, 0, on_cell=lambda c, _: measured.append(c))
    assert measured == [(1, 8), (1, 16), (2, 8), (2, 16), (4, 8), (4, 16)]
    assert [(s.batch_size, s.context_tokens, s.kind) for s in samples] == [
        (b, length, kind) for b, length in cells for _ in range(2) for kind in ("cold", "follow_up")
    ]
    for s in samples:
        assert s.batched and s.gamma == 3 and s.num_passes == 3 and s.time_s > 0
        b, length = s.batch_size, s.context_tokens
        # cold: each session's context, then 2 drafted tokens; follow-up: the KV cropped to
        # the context, the one fresh token forwarded, then 2 drafted tokens; per row, b rows
        row = pass_shapes(length, 0, 3) if s.kind == "cold" else pass_shapes(1, length, 3)
        assert s.shape == BatchShape.of(row * b)
        # Eq. 17's regressor, Σ FLOPs, is the sum over the passes' rows of the one formula
        per_row = sum(DRAFT.flops(new, (new + cached) * new) for new, cached in row)
        assert DRAFT.flops(s.shape.num_linear, s.shape.num_interactions) == pytest.approx(
            b * per_row, rel=1e-12
        )


def _single(time_s: float) -> list[DraftSample]:
    """Propose calls (b = 1, single session), timed ``time_s`` per 16 context tokens: not
    Eq. 17's rows."""
    out = []
    for context in (16, 64, 256):
        for kind, new, cached in (("cold", context, 0), ("follow_up", 1, context)):
            passes = pass_shapes(new, cached, 4)
            shape = BatchShape.of(passes)
            out.append(DraftSample(kind, context, 4, shape, 4, time_s * context / 16))
    return out


def _batched(max_batch: int, printed: bool) -> list[DraftSample]:
    """Batched calls at b = 1, 2, 4, ... ``max_batch``, each pass timed c1·Σ_rows FLOPs + c2
    (over the architecture's FLOPs, or the pipeline model's printed ones), three runs each,
    the middle one exact and the others off by ±50% (the fit takes each cell's median)."""
    dims = model_dims(DRAFT)
    out = []
    sizes = [b for b in (1, 2, 4, 8) if b <= max_batch]
    for b in sizes:
        for context in (16, 64, 256):
            for kind, new, cached in (("cold", context, 0), ("follow_up", 1, context)):
                rows = pass_shapes(new, cached, 4)
                flops = sum(
                    dims.flops(n, c) if printed else DRAFT.flops(n, (n + c) * n) for n, c in rows
                )
                exact = 4 * C2_S + C1_S_PER_FLOP * b * float(flops)
                for factor in (1.5, 1.0, 0.5):
                    shape = BatchShape.of(rows * b)
                    out.append(
                        DraftSample(kind, context, 4, shape, 4, exact * factor, b, batched=True)
                    )
    return out


@pytest.mark.parametrize("printed", [False, True])
def test_eq_17_is_fitted_over_the_batched_calls(printed: bool) -> None:
    samples = _single(1.0) + _batched(8, printed)
    draft = fit_draft("gemma3-270m-draft", samples, DRAFT, 2, 20)
    fit = draft.zhu_printed if printed else draft.zhu
    assert fit is not None and fit.values == pytest.approx((C1_S_PER_FLOP, C2_S), rel=1e-9)
    assert fit.test.mae_s == pytest.approx(0.0, abs=1e-12)
    assert draft.per_token_s == pytest.approx((1 + 4 + 16) / 3 / 4)  # the propose calls' only
    assert draft.wisp.train.num_samples + draft.wisp.test.num_samples == 6
    assert fit.train.num_samples + fit.test.num_samples == 4 * 3 * 2  # one per cell and kind


def _result(max_batch: int) -> ProfileResult:
    grid = design_grid(QUICK_GRID)
    samples = [Sample(i, 0, c.entries, 0.01 * (1 + i % 5)) for i, c in enumerate(grid)]
    wisp, zhu = fit_target(samples, grid, TARGET, 0, 20)
    printed = fit_target_zhu(samples, grid, TARGET, 0, 20, "printed")
    draft = fit_draft("gemma3-270m-draft", _single(0.1) + _batched(max_batch, True), DRAFT, 2, 20)
    return ProfileResult(
        "gemma3-270m", tuple(grid), tuple(samples), 0, wisp, zhu, draft, "cpu",
        (0.0, 0.0, 0.0), "wall", printed,
    )  # fmt: skip


def test_the_draft_zhu_profiles_say_the_largest_batch_timed(tmp_path: Path) -> None:
    write_profiles(_result(4), tmp_path / "g.yaml", "edgespec profile x")
    for name, batch in (
        ("g-draft.yaml", 1),  # Eq. 19: the single-session propose calls
        ("g-draft-zhu.yaml", 4),
        ("g-draft-zhu-printed.yaml", 4),
    ):
        data = yaml.safe_load((tmp_path / name).read_text())
        assert (data["measured_max_batch_size"], data["measured_max_context_tokens"]) == (
            batch,
            256 + 4,
        )


@pytest.mark.parametrize(("largest_batch", "warned"), [(4, False), (5, True)])
def test_a_plan_within_the_batches_timed_is_not_warned(
    tmp_path: Path, largest_batch: int, warned: bool
) -> None:
    write_profiles(_result(4), tmp_path / "g.yaml", "edgespec profile x")
    draft = tmp_path / "g-draft-zhu-printed.yaml"
    system = PipelineSystem(
        draft_profile=str(draft), verify_profile=str(tmp_path / "g-zhu-printed.yaml")
    )
    batches = (tuple(range(largest_batch)), (largest_batch,))
    plan = PipelinePlan(batches, 3, (1.0,) * (largest_batch + 1), 1.0, 0.0)
    lengths = [(20, 100)] * (largest_batch + 1)
    warnings = plan_range_warnings(system, plan, lengths)
    draft_lines = [line for line in warnings if str(draft) in line]
    assert draft_lines == (
        [
            f"warning: profile {draft} is used for batches of up to {largest_batch} (measured "
            f"up to 4): {EXTRAPOLATED}"
        ]
        if warned
        else []
    )
