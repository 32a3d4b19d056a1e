"""edgespec profile --resume: the checkpoint, resumed measurement and the command's rules."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
import torch

import edgespec.profiling.measure as profile_module
from edgespec.profiling.checkpoint import (
    CheckpointError,
    CheckpointWriter,
    checkpoint_path,
    load_checkpoint,
    setup_of,
)
from edgespec.profiling.command import add_arguments
from edgespec.profiling.command import run as run_command
from edgespec.profiling.grid import GridSpec, design_grid
from edgespec.profiling.measure import Sample, measure_grid
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.commands.signals import Terminated
from edgespec.runtime.testing import tiny_llama

SMALL = GridSpec(
    cold_totals=(12,), new_tokens=(1, 4), totals=(10,), memory_batch_sizes=(1, 2),
    max_batch_size=3, num_random=1, num_mixed=1, num_test=2, warmup_runs=1, runs=2,
)  # fmt: skip
SETUP = setup_of("tiny", SMALL, 1)


def _samples(config: int) -> list[Sample]:
    return [Sample(config, 0, ((4, 10), (1, 0)), 0.25), Sample(config, 1, ((4, 11),), 0.5)]


def test_checkpoint_round_trip_and_cut_off_last_line(tmp_path: Path) -> None:
    path = tmp_path / "p-samples.jsonl"
    assert checkpoint_path(tmp_path / "p.yaml") == path
    with CheckpointWriter(path, SETUP, append=False) as writer:
        writer.add(0, _samples(0), 6)
        writer.add(3, _samples(3), 4)
    loaded = load_checkpoint(path, SETUP)
    assert loaded.samples == {0: tuple(_samples(0)), 3: tuple(_samples(3))}
    assert loaded.num_prompts == 10
    with path.open("a") as f:
        f.write('{"config": 5, "num_pro')  # killed mid-write
    assert load_checkpoint(path, SETUP).samples.keys() == {0, 3}
    with CheckpointWriter(path, SETUP, append=True) as writer:  # drops the cut-off line
        writer.add(5, _samples(5), 1)
    loaded = load_checkpoint(path, SETUP)
    assert loaded.samples.keys() == {0, 3, 5} and loaded.num_prompts == 11


def test_checkpoint_errors_name_file_line_and_setting(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with CheckpointWriter(path, SETUP, append=False) as writer:
        writer.add(0, _samples(0), 6)
        writer.add(1, _samples(1), 6)
    other = setup_of("tiny", GridSpec(), 2)
    with pytest.raises(CheckpointError, match=r"other settings: grid\.cold_totals .*threads"):
        load_checkpoint(path, other)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "{not json", lines[2]]) + "\n")
    with pytest.raises(CheckpointError, match=r"c\.jsonl:2: malformed line"):
        load_checkpoint(path, SETUP)
    path.write_text("hello\n")
    with pytest.raises(CheckpointError, match=r"c\.jsonl:1: not an edgespec profile checkpoint"):
        load_checkpoint(path, SETUP)


def test_resumed_measurement_keeps_done_configurations_and_measures_the_rest() -> None:
    torch.set_num_threads(1)
    backend = TransformersTarget(tiny_llama(0, hidden_size=32))
    grid = design_grid(SMALL)
    done = {0: tuple(_samples(0)), 2: tuple(_samples(2))}
    measured: list[tuple[int, int, int]] = []
    samples, num_prompts = measure_grid(
        backend, grid, SMALL, done=done,
        on_measured=lambda i, s, n: measured.append((i, len(s), n)),
    )  # fmt: skip
    rest = [i for i in range(len(grid)) if i not in done]
    assert [m[0] for m in measured] == rest and all(m[1] == SMALL.runs for m in measured)
    assert [s.config_index for s in samples] == sorted(
        [i for i in rest for _ in range(SMALL.runs)] + [0, 0, 2, 2]
    )
    assert [s for s in samples if s.config_index in done] == [*done[0], *done[2]]
    runs = SMALL.warmup_runs + SMALL.runs
    assert [m[2] for m in measured] == [len(grid[i].entries) * runs for i in rest]
    assert num_prompts == sum(m[2] for m in measured)


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def test_interrupted_profile_resumes_and_refuses_to_overwrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    model_dir = tmp_path / "tiny"
    tiny_llama().save_pretrained(str(model_dir))
    out = tmp_path / "p.yaml"
    argv: tuple[str, ...] = ("--target", str(model_dir), "--quick", "--threads", "1")
    argv += ("--bootstrap", "20", "--out", str(out))
    real = profile_module.measure_batch
    calls: list[str] = []

    def interrupt_after(limit: int) -> Any:
        def measure(*a: Any) -> Any:
            if len(calls) == limit:
                raise KeyboardInterrupt
            calls.append(a[3])
            return real(*a)

        return measure

    runs = 3  # QUICK_GRID: 1 warm-up + 2 runs
    monkeypatch.setattr(profile_module, "measure_batch", interrupt_after(5 * runs + 1))
    assert run_command(_args(*argv)) == 130
    ckpt = tmp_path / "p-samples.jsonl"
    assert "interrupted after 5/36 configurations" in capsys.readouterr().err
    assert len(ckpt.read_text().splitlines()) == 1 + 5

    assert run_command(_args(*argv)) == 2  # neither --resume nor --fresh: nothing lost
    assert capsys.readouterr().err == (
        f"edgespec profile: {ckpt} holds an unfinished profile (5 configurations "
        "measured): add --resume to continue it, or --fresh to start over\n"
    )
    assert run_command(_args(*argv, "--resume", "--threads", "2")) == 2
    assert "other settings: threads (checkpoint 1, now 2)" in capsys.readouterr().err

    calls.clear()
    monkeypatch.setattr(profile_module, "measure_batch", interrupt_after(10**9))
    assert run_command(_args(*argv, "--resume")) == 0
    assert "resuming: 5 of 36 configurations already measured" in capsys.readouterr().err
    assert len(calls) == (36 - 5) * runs and not calls[0].startswith("c0r")
    assert calls[0] == "c5r0" and not ckpt.exists() and out.is_file()
    elsewhere = tmp_path / "q.yaml"  # no stopped profile there: it ran a new one whole
    assert run_command(_args(*argv, "--resume", "--out", str(elsewhere))) == 2
    assert capsys.readouterr().err == (
        f"edgespec profile: --resume: no unfinished profile to continue "
        f"({tmp_path / 'q-samples.jsonl'} does not exist): give the --out the stopped profile "
        "writes, or leave --resume out\n"
    )
    assert not elsewhere.exists()
    report = json.loads((tmp_path / "p-report.json").read_text())
    assert sorted({s["config"] for s in report["samples"]}) == list(range(36))
    assert len(report["samples"]) == 36 * 2


def test_terminated_profile_says_its_checkpoint_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGTERM (``kill PID``, a session's end) keeps the checkpoint as Ctrl-C does, and says
    so and how to continue as Ctrl-C does; edgespec's ``terminated`` line and 143 follow."""
    model_dir = tmp_path / "tiny"
    tiny_llama().save_pretrained(str(model_dir))
    out = tmp_path / "p.yaml"
    argv = ("--target", str(model_dir), "--quick", "--threads", "1", "--out", str(out))
    real = profile_module.measure_batch
    calls: list[str] = []

    def measure(*a: Any) -> Any:
        if len(calls) == 3 * 3 + 1:  # QUICK_GRID: 1 warm-up + 2 runs per configuration
            raise Terminated
        calls.append(a[3])
        return real(*a)

    monkeypatch.setattr(profile_module, "measure_batch", measure)
    with pytest.raises(Terminated):
        run_command(_args(*argv))
    ckpt = tmp_path / "p-samples.jsonl"
    assert len(ckpt.read_text().splitlines()) == 1 + 3
    assert (
        f"terminated after 3/36 configurations; they are kept in {ckpt}: run the same "
        "command with --resume to continue"
    ) in " ".join(capsys.readouterr().err.split())
