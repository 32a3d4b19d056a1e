"""``edgespec profile --resume`` with other settings names only what differs, with the
checkpoint's value and the run's, spelled as the flags take them. A checkpoint written
before ``--device``, ``--dtype`` and ``--clock`` existed holds none of them (and one
written at their defaults leaves them out too); they were compared as ``None``: resuming
with ``--dtype bfloat16`` said ``device (checkpoint None, now 'cpu'); dtype (checkpoint
None, now 'bfloat16')`` although both ran on the CPU, and ``--clock cpu`` said
``grid.clock (checkpoint None, now 'cpu')`` of a checkpoint timed by the wall clock."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import pytest

from edgespec.profiling.checkpoint import (
    FORMAT,
    VERSION,
    CheckpointError,
    load_checkpoint,
    setup_of,
)
from edgespec.profiling.command import grid_spec
from edgespec.profiling.command import run as run_command
from edgespec.profiling.grid import GridSpec
from tests.profiling.test_checkpoint import SMALL, _args

OTHER = (
    "was written by a profile with other settings: {}. Run with the same settings, or with "
    "--fresh to start over"
)
"""The refusal after the checkpoint's path, ``{}`` the settings that differ."""


def _older_setup(target: str, spec: GridSpec, threads: int) -> dict[str, Any]:
    """A setup as versions before --device, --dtype and --clock wrote it."""
    grid = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(spec).items()}
    del grid["clock"]
    return {"target": target, "grid": grid, "threads": threads}


def _write(path: Path, setup: dict[str, Any]) -> Path:
    """A checkpoint of ``setup`` with one configuration measured."""
    header = {"format": FORMAT, "version": VERSION, "setup": setup}
    record = {"config": 0, "num_prompts": 1, "samples": [{"run": 0, "entries": [[1, 0]],
                                                          "time_s": 0.5}]}  # fmt: skip
    path.write_text(json.dumps(header) + "\n" + json.dumps(record) + "\n")
    return path


@pytest.mark.parametrize(
    ("recorded", "now", "differs"),
    [
        (
            _older_setup("tiny", SMALL, 1),
            setup_of("tiny", SMALL, 1, dtype="bfloat16"),
            "dtype (checkpoint float32, now bfloat16)",
        ),
        (
            _older_setup("tiny", SMALL, 1),
            setup_of("tiny", replace(SMALL, clock="cpu"), 1),
            "grid.clock (checkpoint wall, now cpu)",
        ),
        (
            {**_older_setup("tiny", SMALL, 1), "device": "cuda", "dtype": "bfloat16"},
            setup_of("tiny", SMALL, 1),
            "device (checkpoint cuda, now cpu); dtype (checkpoint bfloat16, now float32)",
        ),
        (
            _older_setup("tiny", SMALL, 1),
            setup_of("tiny/", replace(SMALL, runs=3), 2),
            "grid.runs (checkpoint 2, now 3); target (checkpoint tiny, now tiny/); threads "
            "(checkpoint 1, now 2)",
        ),
    ],
    ids=["dtype", "clock", "recorded device", "others"],
)
def test_only_what_differs_is_named_with_the_recorded_value(
    tmp_path: Path, recorded: dict[str, Any], now: dict[str, Any], differs: str
) -> None:
    path = _write(tmp_path / "p-samples.jsonl", recorded)
    with pytest.raises(CheckpointError) as refused:
        load_checkpoint(path, now)
    assert str(refused.value) == f"{path} {OTHER.format(differs)}"
    assert load_checkpoint(path, recorded).samples.keys() == {0}  # its own settings resume


def test_an_older_checkpoint_resumes_at_the_defaults(tmp_path: Path) -> None:
    path = _write(tmp_path / "p-samples.jsonl", _older_setup("tiny", SMALL, 1))
    now = setup_of("tiny", SMALL, 1, device="cpu", dtype="float32")
    assert load_checkpoint(path, now).samples.keys() == {0}


@pytest.mark.parametrize(
    ("flag", "differs"),
    [
        (["--dtype", "bfloat16"], "dtype (checkpoint float32, now bfloat16)"),
        (["--clock", "cpu"], "grid.clock (checkpoint wall, now cpu)"),
    ],
)
def test_resuming_with_another_flag_names_it_before_the_target_loads(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flag: list[str],
    differs: str,
) -> None:
    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the target loaded")

    monkeypatch.setattr("edgespec.models.loading.load_model", never)
    argv = ["--target", "t", "--quick", "--threads", "1", "--out", str(tmp_path / "p.yaml")]
    spec = grid_spec(_args(*argv))
    path = _write(tmp_path / "p-samples.jsonl", _older_setup("t", spec, 1))
    assert run_command(_args(*argv, "--resume", *flag)) == 2
    assert capsys.readouterr().err == f"edgespec profile: {path} {OTHER.format(differs)}\n"


def test_one_model_spelled_otherwise_resumes_and_another_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--target m/llama`` then ``--target ./m/llama`` (or its absolute path): one model;
    it was refused as ``target (checkpoint m/llama, now ./m/llama)``."""
    for name in ("llama", "other"):
        (tmp_path / "m" / name).mkdir(parents=True)
        (tmp_path / "m" / name / "config.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    path = _write(tmp_path / "p-samples.jsonl", setup_of("m/llama", SMALL, 1))
    for spelled in ("./m/llama", str(tmp_path / "m" / "llama"), "m/llama/"):
        assert load_checkpoint(path, setup_of(spelled, SMALL, 1)).samples.keys() == {0}
    with pytest.raises(CheckpointError) as refused:
        load_checkpoint(path, setup_of("m/other", SMALL, 1))
    differs = "target (checkpoint m/llama, now m/other)"
    assert str(refused.value) == f"{path} {OTHER.format(differs)}"
