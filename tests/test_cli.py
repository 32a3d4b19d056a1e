from __future__ import annotations

import pytest

from edgespec.cli import SUBCOMMANDS, main


def test_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    for name in SUBCOMMANDS:
        assert name in out


@pytest.mark.parametrize("seed", ["zhu", "wisv"])
def test_seed_not_reproduced_yet_says_so_and_fails(
    seed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["reproduce", seed]) == 2
    assert capsys.readouterr().err == f"edgespec reproduce {seed}: not reproduced yet\n"


def test_user_input_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--target", "/nonexistent/model", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err == "edgespec serve: model path '/nonexistent/model' does not exist\n"
