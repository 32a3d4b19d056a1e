"""A profile checkpoint's samples are checked when resumed: a time that is not a finite
number >= 0 (a NaN fits NaN coefficients), an entry that is not two integers, a
configuration index outside the grid or given twice is an error naming the file, the
line and the entry."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from edgespec.profiling.checkpoint import CheckpointError, CheckpointWriter, load_checkpoint
from edgespec.profiling.grid import design_grid
from tests.profiling.test_checkpoint import SETUP, SMALL, _samples


def _record(change: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "config": 1,
        "num_prompts": 4,
        "samples": [
            {"run": 0, "entries": [[4, 10], [1, 0]], "time_s": 0.25},
            {"run": 1, "entries": [[4, 11]], "time_s": 0.5},
        ],
    }
    change(record)
    return record


def _sample(index: int, key: str, value: Any) -> Any:
    return lambda r: r["samples"][index].__setitem__(key, value)


def _entry(value: Any) -> Any:
    return lambda r: r["samples"][0]["entries"].__setitem__(1, value)


NUM_CONFIGS = len(design_grid(SMALL))


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (_sample(0, "time_s", math.nan), "samples[0].time_s must be a finite number >= 0, got nan"),
        (_sample(1, "time_s", math.inf), "samples[1].time_s must be a finite number >= 0, got inf"),
        (_sample(1, "time_s", -0.5), "samples[1].time_s must be a finite number >= 0, got -0.5"),
        (_sample(0, "time_s", "0.2"), "samples[0].time_s must be a number, got '0.2'"),
        (_sample(0, "run", 1.0), "samples[0].run must be an integer, got 1.0"),
        (_entry([7.9, "3"]), "samples[0].entries[1] L_new must be an integer, got 7.9"),
        (_entry([7, "3"]), "samples[0].entries[1] L_cached must be an integer, got '3'"),
        (_entry([0, 3]), "samples[0].entries[1] L_new must be >= 1, got 0"),
        (_entry([1, -3]), "samples[0].entries[1] L_cached must be >= 0, got -3"),
        (_entry([1, 2, 3]), "samples[0].entries[1] must be [L_new, L_cached], got [1, 2, 3]"),
        (_entry(True), "samples[0].entries[1] must be [L_new, L_cached], got true"),
        (lambda r: r.__setitem__("config", 999), f"config must be in [0, {NUM_CONFIGS}), got 999"),
        (lambda r: r.__setitem__("config", -1), f"config must be in [0, {NUM_CONFIGS}), got -1"),
        (lambda r: r.__setitem__("config", "1"), "config must be an integer, got '1'"),
        (lambda r: r.__setitem__("num_prompts", True), "num_prompts must be an integer, got true"),
        (lambda r: r.__setitem__("samples", []), "samples must be a non-empty list, got []"),
        (lambda r: r.pop("num_prompts"), "expected an object with config, num_prompts and"),
    ],
)
def test_a_bad_sample_is_refused_naming_file_line_and_entry(
    tmp_path: Path, change: Any, problem: str
) -> None:
    path = tmp_path / "p-samples.jsonl"
    with CheckpointWriter(path, SETUP, append=False) as writer:
        writer.add(0, _samples(0), 6)
    with path.open("a") as f:
        f.write(json.dumps(_record(change)) + "\n")
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path, SETUP)
    assert str(info.value).startswith(f"{path}:3: malformed line ({problem}")


def test_a_configuration_measured_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "p-samples.jsonl"
    with CheckpointWriter(path, SETUP, append=False) as writer:
        writer.add(2, _samples(2), 6)
        writer.add(2, _samples(2), 6)
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path, SETUP)
    assert str(info.value) == f"{path}:3: config 2 was measured before"


def test_a_cut_off_last_line_is_still_measured_again(tmp_path: Path) -> None:
    path = tmp_path / "p-samples.jsonl"
    with CheckpointWriter(path, SETUP, append=False) as writer:
        writer.add(NUM_CONFIGS - 1, _samples(NUM_CONFIGS - 1), 6)
    with path.open("a") as f:
        f.write('{"config": 3, "num_prompts": 2, "samples": [{"run": 0, "time_s": NaN')
    loaded = load_checkpoint(path, SETUP)
    assert loaded.samples == {NUM_CONFIGS - 1: tuple(_samples(NUM_CONFIGS - 1))}
