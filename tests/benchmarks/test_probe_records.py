"""What benchmarks/probes/head_speed.py, distill_speed.py, mixed_batch_ab.py and
row_products.py write with ``--json PATH``, built from hand-made timings (their runs load
Gemma 3 270M and are not run here), and their documented positional arguments."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.benchmarks.scripts import load_script

HEAD = load_script("probes/head_speed.py", "head_speed_probe")
DISTILL = load_script("probes/distill_speed.py", "distill_speed_probe")
MIXED = load_script("probes/mixed_batch_ab.py", "mixed_batch_ab_probe")
ROWS = load_script("probes/row_products.py", "row_products_probe")


def _clock(*readings: float) -> Iterator[float]:
    return iter(readings)


def test_median_ms_times_each_call_after_an_untimed_one() -> None:
    calls: list[int] = []
    clock = _clock(0.0, 0.010, 1.0, 1.030, 2.0, 2.020)
    ms = HEAD.median_ms(lambda: calls.append(1), 3, lambda: next(clock))
    assert (ms, len(calls)) == (pytest.approx(20.0), 4)


def test_a_head_timing_records_what_it_prints() -> None:
    timing = HEAD.HeadTiming(5, 114.54, 92.31, True)
    assert timing.line() == "5 rows: one GEMM 114.5 ms, blocked 92.3 ms, identical True"
    assert timing.to_json() == {
        "num_rows": 5,
        "one_gemm_ms": 114.54,
        "blocked_ms": 92.31,
        "blocked_over_one_gemm": 92.31 / 114.54,
        "identical": True,
    }


def test_head_speed_keeps_its_documented_positions(tmp_path: Path) -> None:
    assert vars(HEAD.parse([])) == {"threads": 1, "rows": [1, 5], "json": None}
    args = HEAD.parse(["2", "19,48", "--json", str(tmp_path / "h.json")])
    assert vars(args) == {"threads": 2, "rows": [19, 48], "json": tmp_path / "h.json"}


def _run(name: str, seconds: float, *rows: list[int]) -> Any:
    return DISTILL.GenerationRun(name, seconds, tuple(torch.tensor(r) for r in rows))


def test_distill_speed_records_both_runs_and_the_identical_rows() -> None:
    trimmed = _run("draft-vocabulary head", 8.0, [1, 2, 3], [4, 5, 6])
    full = _run("transformers generate", 12.5, [1, 2, 3], [4, 5, 7])
    assert trimmed.line() == "draft-vocabulary head: 8.0 s, 6 tokens, 0.8 tokens/s"
    assert DISTILL.speed_results(trimmed, full) == {
        "runs": {
            "draft-vocabulary head": {"seconds": 8.0, "num_tokens": 6, "tokens_per_s": 0.75},
            "transformers generate": {"seconds": 12.5, "num_tokens": 6, "tokens_per_s": 0.48},
        },
        "time_ratio": 0.64,
        "identical_rows": 1,
        "num_rows": 2,
    }


def test_a_timed_run_reads_the_clock_around_it() -> None:
    clock = _clock(3.0, 5.5)
    run = DISTILL.timed("x", lambda: {"output_ids": [torch.tensor([1, 2])]}, lambda: next(clock))
    assert (run.name, run.seconds, run.num_tokens) == ("x", 2.5, 2)


def test_distill_speed_keeps_its_documented_positions() -> None:
    assert vars(DISTILL.parse([])) == {"new_tokens": 24, "prompts": 16, "json": None}
    assert vars(DISTILL.parse(["8", "4"])) == {"new_tokens": 8, "prompts": 4, "json": None}


def test_mixed_batch_records_each_shape_s_medians_and_ratio() -> None:
    times = {(name, split): [1.0, 3.0, 2.0] for name in MIXED.SHAPES for split in (False, True)}
    times[("cold 971", True)] = [0.5, 0.4, 0.6]
    rows = MIXED.shape_results(times)
    assert [row["shape"] for row in rows] == list(MIXED.SHAPES)
    assert rows[0] == {
        "shape": "cold 971",
        "entries": [[971, 0]],
        "one_pass_ms": 2000.0,
        "split_ms": 500.0,
        "split_over_one_pass": 0.25,
    }


def test_mixed_batch_refuses_fewer_than_two_repeats(capsys: pytest.CaptureFixture[str]) -> None:
    assert vars(MIXED.parse(["2", "4"])) == {"threads": 2, "repeats": 4, "json": None}
    with pytest.raises(SystemExit) as exit_info:
        MIXED.parse(["2", "1"])
    assert exit_info.value.code == 2
    assert (
        capsys.readouterr()
        .err.splitlines()[-1]
        .endswith("error: REPEATS must be at least 2: the first is a discarded warm-up")
    )


def test_row_products_records_medians_ratios_and_the_checks() -> None:
    times = {
        "one-product-4": {"B=1 n=1": [0.002, 0.004, 0.003], "B=16 n=5": [0.010, 0.010]},
        "fixed-8": {"B=1 n=1": [0.003, 0.003, 0.003], "B=16 n=5": [0.013, 0.017]},
    }
    assert ROWS.row_results(times, {"one-product-4": False, "fixed-8": True}) == {
        "median_ms": {
            "one-product-4": {"B=1 n=1": 3.0, "B=16 n=5": 10.0},
            "fixed-8": {"B=1 n=1": 3.0, "B=16 n=5": 15.0},
        },
        "ratio_to_one_product_4": {
            "one-product-4": {"B=1 n=1": 1.0, "B=16 n=5": 1.0},
            "fixed-8": {"B=1 n=1": 1.0, "B=16 n=5": 1.5},
        },
        "row_alone_equals_row_in_16": {"one-product-4": False, "fixed-8": True},
    }


def test_row_products_takes_json_like_the_other_probes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``[THREADS] [REPEATS] [--json PATH]`` as every probe: the output file is no longer a
    third positional argument, and a bad one is refused before the model loads."""
    assert vars(ROWS.parse([])) == {"threads": 2, "repeats": 6, "json": None}
    out = tmp_path / "rows.json"
    assert vars(ROWS.parse(["2", "6", "--json", str(out)])) == {
        "threads": 2,
        "repeats": 6,
        "json": out,
    }
    for argv, error in (
        (["2", "6", str(out)], f"unrecognized arguments: {out}"),
        (["2", "6", "--json", str(tmp_path / "no" / "x.json")],
         f"argument --json: folder {tmp_path / 'no'} of {tmp_path / 'no' / 'x.json'} does not "
         "exist"),
        (["2", "0"], "argument REPEATS: expected an integer >= 1, got '0'"),
    ):  # fmt: skip
        with pytest.raises(SystemExit) as exit_info:
            ROWS.parse(argv)
        assert exit_info.value.code == 2
        assert capsys.readouterr().err.splitlines()[-1].endswith(f"error: {error}")
