"""The drafter's batched timings in the checkpoint: each (b, context) cell a line as it
finishes, a resumed run not timing it again, a checkpoint without such lines (written
before they existed) resumed with all cells timed; and ``--draft-batches``' refusals.
Was: no batched timing, no flag, nothing of the drafter in the checkpoint."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

import edgespec.profiling.draft_batch as draft_batch_module
from edgespec.policies.estimator import BatchShape
from edgespec.profiling.checkpoint import CheckpointError, CheckpointWriter, load_checkpoint
from edgespec.profiling.checks import draft_batches
from edgespec.profiling.command import add_arguments
from edgespec.profiling.command import run as run_command
from edgespec.profiling.draft import DraftSample
from edgespec.profiling.measure import Sample
from edgespec.runtime.testing import tiny_llama
from tests.profiling.test_checkpoint import SETUP

CELL = [
    DraftSample("cold", 16, 4, BatchShape(8, 38, 420, 102), 4, 0.5, 2, True),
    DraftSample("follow_up", 16, 4, BatchShape(8, 8, 150, 142), 4, 0.25, 2, True),
]


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def test_draft_cells_round_trip_and_an_older_checkpoint_has_none(tmp_path: Path) -> None:
    path = tmp_path / "p-samples.jsonl"
    with CheckpointWriter(path, SETUP, append=False) as writer:
        writer.add(0, [Sample(0, 0, ((4, 10),), 0.25)], 1)
    older = load_checkpoint(path, SETUP)  # as a checkpoint before the drafter's lines
    assert older.samples.keys() == {0} and older.draft_cells == {}
    with CheckpointWriter(path, SETUP, append=True) as writer:
        writer.add_draft(("gemma3-270m-draft", 4, 2, 16), CELL)
        writer.add(1, [Sample(1, 0, ((1, 10),), 0.5)], 1)
    loaded = load_checkpoint(path, SETUP)
    assert loaded.samples.keys() == {0, 1}
    assert loaded.draft_cells == {("gemma3-270m-draft", 4, 2, 16): tuple(CELL)}
    lines = path.read_text().splitlines()
    bad = json.loads(lines[2])
    bad["samples"][1]["time_s"] = float("nan")
    path.write_text("\n".join([*lines[:2], json.dumps(bad), lines[3]]) + "\n")
    with pytest.raises(CheckpointError) as error:
        load_checkpoint(path, SETUP)
    assert str(error.value) == (
        f"{path}:3: malformed line (samples[1].time_s must be a finite number >= 0, got nan)"
    )
    path.write_text("\n".join([*lines[:3], lines[2]]) + "\n")
    with pytest.raises(CheckpointError) as error:
        load_checkpoint(path, SETUP)
    assert str(error.value) == (
        f"{path}:4: malformed line (draft batch cell ('gemma3-270m-draft', 4, 2, 16) was "
        "measured before)"
    )


def test_an_interrupted_profile_resumes_without_retiming_its_draft_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    model_dir = tmp_path / "tiny"
    tiny_llama().save_pretrained(str(model_dir))
    out = tmp_path / "p.yaml"
    argv: tuple[str, ...] = ("--target", str(model_dir), "--draft", str(model_dir), "--quick")
    argv += ("--threads", "1")
    argv += ("--bootstrap", "20", "--out", str(out), "--draft-batches", "2,1")
    real = draft_batch_module.measure_cell
    cells: list[tuple[int, int]] = []

    def interrupt_after(limit: int) -> Any:
        def measure(model: Any, source: Any, cell: tuple[int, int], *rest: Any) -> Any:
            if len(cells) == limit:
                raise KeyboardInterrupt
            cells.append(cell)
            return real(model, source, cell, *rest)

        return measure

    monkeypatch.setattr(draft_batch_module, "measure_cell", interrupt_after(2))
    assert run_command(_args(*argv)) == 130
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.startswith("timed draft batch")] == [
        "timed draft batch b=1 at 16 tokens (1/6 cells)",
        "timed draft batch b=1 at 64 tokens (2/6 cells)",
    ]
    cells.clear()
    monkeypatch.setattr(draft_batch_module, "measure_cell", interrupt_after(10**9))
    assert run_command(_args(*argv, "--resume")) == 0
    err = capsys.readouterr().err
    assert "resuming: 2 draft batch cells already timed" in err
    assert cells == [(1, 256), (2, 16), (2, 64), (2, 256)]
    report = json.loads((tmp_path / "p-report.json").read_text())
    batched = [s for s in report["draft"]["samples"] if s["batched"]]
    timed = [(s["batch_size"], s["context_tokens"]) for s in batched if s["kind"] == "cold"]
    assert timed == [(b, c) for b in (1, 2) for c in (16, 64, 256) for _ in range(3)]
    assert not (tmp_path / "p-samples.jsonl").exists()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("0", "each batch size must be an integer in [1, 64], got '0'"),
        ("1,65", "each batch size must be an integer in [1, 64], got '65'"),
        ("1,x", "each batch size must be an integer in [1, 64], got 'x'"),
        ("2,2", "batch size 2 is given twice"),
        ("9" * 5000, "each batch size must be an integer in [1, 64], got '" + "9" * 29),
        ("1," * 100_000, "at most 8 batch sizes, got more in " + "1," * 30),
    ],
)
def test_bad_draft_batches_are_one_line(text: str, problem: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as error:
        draft_batches(text)
    assert str(error.value) == problem


def test_draft_batches_read_ascending() -> None:
    assert draft_batches("8, 1,4") == (1, 4, 8)


@pytest.mark.parametrize("draft", [(), ("--draft", "ngram")])
def test_draft_batches_need_a_draft_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], draft: tuple[str, ...]
) -> None:
    args = _args("--target", "t", *draft, "--draft-batches", "2", "--out", str(tmp_path / "p.yaml"))
    assert run_command(args) == 2
    assert capsys.readouterr().err == (
        "edgespec profile: --draft-batches times a draft model batched, as the drafting server "
        "runs it: give --draft MODEL (ngram has no model)\n"
    )
