"""``edgespec profile``, the command: argument mistakes in one line with exit 2, a missing
target named, and progress lines when stderr is not a terminal."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from edgespec.errors import UserInputError
from edgespec.profiling.checks import check_args
from edgespec.profiling.command import add_arguments
from edgespec.profiling.command import run as run_command
from edgespec.profiling.measure import context_needed
from edgespec.runtime.testing import tiny_llama


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--out", "p.txt"), "--out must end in .yaml or .yml, got 'p.txt'"),
        (("--scale", "2"), "--scale must be in (0, 1], got 2.0"),
    ],
)
def test_bad_arguments_give_clear_errors(
    argv: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _args("--target", "t", *argv)
    assert check_args(args) == message
    assert run_command(args) == 2
    assert capsys.readouterr().err == f"edgespec profile: {message}\n"


def test_threads_below_one_is_a_usage_error_naming_the_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _args("--target", "t", "--threads", "0")
    assert exit_info.value.code == 2
    assert "argument --threads: must be >= 1, got 0" in capsys.readouterr().err


def test_missing_target_fails_naming_it(tmp_path: Path) -> None:
    from edgespec.errors import UserInputError

    with pytest.raises(UserInputError, match="no-such-model"):
        run_command(_args("--target", str(tmp_path / "no-such-model"), "--quick"))


def test_command_logs_progress_lines_when_not_on_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model_dir = tmp_path / "tiny"
    tiny_llama().save_pretrained(str(model_dir))
    argv = ("--target", str(model_dir), "--draft", "ngram", "--quick", "--threads", "1")
    args = _args(*argv, "--bootstrap", "20", "--out", str(tmp_path / "p.yaml"))
    assert run_command(args) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("profiled ")]
    assert lines and lines[-1].endswith("configurations")
    done, total = lines[-1].split()[1].split("/")
    assert done == total
    assert (tmp_path / "p.yaml").is_file()


def test_a_grid_past_the_targets_context_is_refused_before_anything_is_measured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A target of 64 tokens of context: the quick grid's largest entry (a follow-up of 96
    tokens, cached and new, and 3) is refused once it loads, before a checkpoint is
    written. It failed mid-profile with a traceback, its checkpoint refusing the rerun
    (and --resume failing the same way)."""
    model = tiny_llama()
    model.config.max_position_embeddings = 64
    model.save_pretrained(str(tmp_path / "tiny"))
    argv = ("--target", str(tmp_path / "tiny"), "--quick", "--threads", "1")
    with pytest.raises(UserInputError) as info:
        run_command(_args(*argv, "--out", str(tmp_path / "p.yaml")))
    assert str(info.value) == (
        "the grid's largest entry needs 99 tokens of context (prompt and output), over the "
        "target's context of 64: lower --scale (about 0.62 fits)"
    )
    assert list(tmp_path.iterdir()) == [tmp_path / "tiny"]  # no checkpoint to resume


def test_an_entrys_context_is_its_prompt_and_what_its_passes_commit() -> None:
    """A cold entry of 16 new tokens: a 12-token prompt and 4 drafted, its one pass
    committing at most 5 (it opened with 16 + 3 = 19 new tokens, reserving 31 tokens for
    16); a follow-up of 16 new over 256 cached: 256 + 16 + 3."""
    assert context_needed((16, 0)) == 12 + 4 + 3
    assert context_needed((16, 256)) == 256 + 16 + 3
