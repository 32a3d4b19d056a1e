from __future__ import annotations

import pytest

from edgespec.cli import SUBCOMMANDS, main


def test_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    for name in SUBCOMMANDS:
        assert name in out


@pytest.mark.parametrize("name", ["reproduce"])
def test_unbuilt_subcommand_says_so_and_fails(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([name]) == 2
    assert "not built yet" in capsys.readouterr().err


def test_user_input_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--target", "/nonexistent/model", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err == "edgespec serve: model path '/nonexistent/model' does not exist\n"
