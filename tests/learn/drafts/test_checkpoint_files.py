"""What a rerun does with the training checkpoint it finds in ``--out``
(:func:`~edgespec.learn.drafts.checkpointing.resumed_or_fresh`): resumes one of the same
settings and data, saying so; refuses one of other settings naming each flag, and one that
cannot be read naming the file; discards, in a line, one of other data and any with
``--overwrite``; removes the temporary files of a killed save."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from edgespec.errors import UserInputError
from edgespec.learn.drafts.checkpoint import (
    CHECKPOINT_NAME,
    check_resumable,
    checkpoint_path,
    read_checkpoint,
)
from edgespec.learn.drafts.checkpointing import Checkpointer, resumed_or_fresh
from tests.learn.drafts.test_checkpoint import NEVER_S, SETTINGS, _stop_at, _train


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """A folder holding the checkpoint of a draft's training stopped after 3 steps."""
    folder = tmp_path / "out"
    run = Checkpointer(checkpoint_path(folder), SETTINGS, "data", every_s=NEVER_S)
    with pytest.raises(KeyboardInterrupt):
        _train("draft", run, [], _stop_at(3, KeyboardInterrupt()))
    return folder


def test_the_same_settings_and_data_resume_it_saying_so(out: Path) -> None:
    said: list[str] = []
    run = resumed_or_fresh(out, SETTINGS, "data", False, said.append)
    assert run.resumed is not None and run.step == 3
    assert len(said) == 1
    assert re.fullmatch(
        r"resuming training at step 3/\d+ \(checkpoint of \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\)",
        said[0],
    ), said
    check_resumable(out, SETTINGS, overwrite=False)  # nothing refused before the target loads


def test_other_settings_are_refused_naming_each_flag(out: Path) -> None:
    now = {"--lr": 0.001, "--epochs": 2}
    expected = (
        f"--out {out} holds a training checkpoint ({CHECKPOINT_NAME}) made with other "
        "settings (--epochs not recorded there, 2 now; --lr 0.01 there, 0.001 now): "
        "rerun with those to resume it, or --overwrite discards it and trains from the start"
    )
    with pytest.raises(UserInputError) as early:
        check_resumable(out, now, overwrite=False)
    assert str(early.value) == expected
    with pytest.raises(UserInputError) as late:
        resumed_or_fresh(out, now, "data", False, print)
    assert str(late.value) == expected
    check_resumable(out, now, overwrite=True)  # --overwrite: discarded when training starts


def test_other_data_discard_it_in_a_line(out: Path) -> None:
    said: list[str] = []
    run = resumed_or_fresh(out, SETTINGS, "other data", False, said.append)
    assert run.resumed is None and run.step == 0
    assert said == [
        f"discarded the training checkpoint {out / CHECKPOINT_NAME}: it was made on other "
        "training data (the data stages have added to it, or other folders were given); "
        "training starts at step 0"
    ]
    assert not (out / CHECKPOINT_NAME).exists()


def test_overwrite_discards_it_in_a_line(out: Path) -> None:
    said: list[str] = []
    run = resumed_or_fresh(out, {"--epochs": 9}, "other", True, said.append)
    assert run.resumed is None
    assert said == [
        f"discarded the training checkpoint {out / CHECKPOINT_NAME} (--overwrite): training "
        "starts at step 0"
    ]
    assert not (out / CHECKPOINT_NAME).exists()


def _cut_in_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _garbage(path: Path) -> None:
    path.write_bytes(b"not a checkpoint at all\n" * 10)


def _emptied(path: Path) -> None:
    path.write_bytes(b"")


def _another_torch_file(path: Path) -> None:
    torch.save({"prompt_ids": [torch.tensor([1, 2])]}, path)


def _no_model(path: Path) -> None:
    data = torch.load(path, weights_only=True)
    del data["model"]
    torch.save(data, path)


def _bad_position(path: Path) -> None:
    data = torch.load(path, weights_only=True)
    data["position"]["epoch_rng"] = (3, (1, 2), None)
    torch.save(data, path)


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (_cut_in_half, r"cut off or damaged"),
        (_garbage, r"not a file torch.save wrote"),
        (_emptied, r"empty"),
        (_another_torch_file, r"no edgespec_training_checkpoint 1 record"),
        (_no_model, r"no 'model' entry"),
        (_bad_position, r"bad .*state.*"),
    ],
)
def test_an_unreadable_checkpoint_is_refused_naming_it(
    out: Path, damage: object, reason: str
) -> None:
    path = out / CHECKPOINT_NAME
    damage(path)  # type: ignore[operator]
    pattern = (
        re.escape(f"{path}: not a readable training checkpoint (")
        + reason
        + re.escape("); --overwrite discards it and trains from the start")
    )
    for check in (
        lambda: check_resumable(out, SETTINGS, overwrite=False),
        lambda: resumed_or_fresh(out, SETTINGS, "data", False, print),
    ):
        with pytest.raises(UserInputError) as error:
            check()
        assert re.fullmatch(pattern, str(error.value)), str(error.value)
        assert "\n" not in str(error.value)
    said: list[str] = []
    assert resumed_or_fresh(out, SETTINGS, "data", True, said.append).resumed is None
    assert said and not path.exists()


def test_a_killed_saves_temporary_file_is_removed_a_live_ones_kept(out: Path) -> None:
    dead = out / f".{CHECKPOINT_NAME}.{2**22 + 12345}.tmp"  # above any pid_max: no process
    live = out / f".{CHECKPOINT_NAME}.{os.getpid()}.tmp"
    other = out / ".notes.txt.1.tmp"
    for path in (dead, live, other):
        path.write_bytes(b"part")
    resumed_or_fresh(out, SETTINGS, "data", False, print)
    assert not dead.exists() and live.exists() and other.exists()
    assert read_checkpoint(out / CHECKPOINT_NAME).position.step == 3


def test_a_folder_where_the_checkpoint_goes_is_refused(tmp_path: Path) -> None:
    (tmp_path / CHECKPOINT_NAME).mkdir()
    for overwrite in (False, True):
        with pytest.raises(UserInputError) as error:
            check_resumable(tmp_path, SETTINGS, overwrite)
        assert str(error.value) == (
            f"--out {tmp_path}: {tmp_path / CHECKPOINT_NAME} is a folder where this run writes "
            "a file; move it or give another folder"
        )


def _wrong_shapes(data: dict[str, Any]) -> None:
    name = next(iter(data["model"]))
    data["model"][name] = torch.zeros(3, 3)


def _wrong_order(data: dict[str, Any]) -> None:
    data["position"]["epoch_order"] = (0, 0, 0)


@pytest.mark.parametrize(
    ("tamper", "why"),
    [(_wrong_shapes, r"Error\(s\) in loading state_dict.*"), (_wrong_order, r"its batch .*")],
)
def test_a_checkpoint_that_does_not_fit_the_run_is_refused_naming_it(
    out: Path, tamper: Callable[[dict[str, Any]], None], why: str
) -> None:
    """Read whole, but not of this model or these batches (its settings and data tags
    match): an error naming the file, not a traceback from deep in the loop."""
    path = out / CHECKPOINT_NAME
    data = torch.load(path, weights_only=True)
    tamper(data)
    torch.save(data, path)
    run = resumed_or_fresh(out, SETTINGS, "data", False, print)
    with pytest.raises(UserInputError) as error:
        _train("draft", run, [])
    assert re.fullmatch(
        re.escape(f"{path}: the training checkpoint does not fit this run (")
        + why
        + re.escape("); --overwrite discards it and trains from the start"),
        str(error.value),
    ), str(error.value)
