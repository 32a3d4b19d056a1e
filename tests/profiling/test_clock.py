"""``edgespec profile --clock``: a timed pass on the wall clock or on the process's CPU time."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest
import torch

from edgespec.profiling import measure
from edgespec.profiling.checkpoint import setup_of
from edgespec.profiling.checks import check_args
from edgespec.profiling.command import add_arguments, grid_spec
from edgespec.profiling.grid import GridSpec
from edgespec.profiling.measure import PromptSource, measure_batch
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.testing import tiny_llama


def _ticks(*values: float) -> Iterator[float]:
    yield from values


@pytest.mark.parametrize(("clock", "expected_s"), [("wall", 2.0), ("cpu", 7.0)])
def test_the_timed_pass_reads_the_chosen_clock(
    clock: str, expected_s: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch.set_num_threads(1)
    engine = VerificationEngine(TransformersTarget(tiny_llama(0, hidden_size=32)))
    prompts = PromptSource(engine.backend.vocab_size, 0)
    wall, cpu = _ticks(10.0, 12.0), _ticks(100.0, 107.0)
    monkeypatch.setattr(measure, "perf_counter", lambda: next(wall))
    monkeypatch.setattr(measure, "process_time", lambda: next(cpu))
    entries, elapsed = measure_batch(engine, prompts, [(3, 5)], "t", clock)
    assert elapsed == expected_s
    assert entries[0][0] == 3


def test_an_unknown_clock_is_refused() -> None:
    with pytest.raises(ValueError, match=r"clock must be one of \('wall', 'cpu'\), got 'gpu'"):
        GridSpec(clock="gpu").validate()


def test_the_flag_reaches_the_grid_and_the_checkpoint_setup() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert grid_spec(parser.parse_args(["--target", "t"])).clock == "wall"
    spec = grid_spec(parser.parse_args(["--target", "t", "--clock", "cpu"]))
    assert spec.clock == "cpu"
    assert setup_of("t", spec, 1)["grid"]["clock"] == "cpu"
    # a wall-clock setup reads as one written before --clock existed (it still resumes)
    assert "clock" not in setup_of("t", GridSpec(), 1)["grid"]


def test_the_cpu_clock_is_refused_on_a_gpu() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--target", "t", "--clock", "cpu", "--device", "cuda"])
    assert check_args(args) == (
        "--clock cpu times this process's CPU work, not --device cuda's: use --clock wall"
    )
    assert (
        check_args(parser.parse_args(["--target", "t", "--clock", "cpu", "--threads", "1"])) is None
    )
