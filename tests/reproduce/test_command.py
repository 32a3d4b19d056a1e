"""``edgespec reproduce`` (edgespec.reproduce.command): argument errors."""

from __future__ import annotations

import pytest

from edgespec.cli import main


def test_unknown_paper_names_the_argument_and_the_choices(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["reproduce", "nosuchpaper"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.endswith(
        "edgespec reproduce: error: argument PAPER: invalid choice: 'nosuchpaper' "
        "(choose from 'wisp', 'dsd', 'zhu', 'wisv', 'wisp-serving', 'wisp-estimator', "
        "'dsd-real-pair', 'wisv-real-pair', 'wisv-heldout')\n"
    )
