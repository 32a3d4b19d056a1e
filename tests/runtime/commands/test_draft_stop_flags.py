"""``edgespec draft --stop-predictor``: a missing or malformed predictor file is one line
naming the flag, before any request; ``bundled`` and ``--stop-threshold`` make the policy."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.errors import UserInputError
from edgespec.policies import stop_drafting
from edgespec.runtime.commands.stop_arguments import stop_policy_from_args
from tests.runtime.commands.test_draft_flag_errors import BASE


def test_a_missing_predictor_file_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "stop.json"
    assert main([*BASE, "--prompt-ids", "1", "--stop-predictor", str(missing)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"edgespec draft: --stop-predictor: stop predictor file {missing} does not exist"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[1]", "not a stop predictor (a JSON list, not an object)"),
        ('"mlp"', "not a stop predictor (a JSON str, not an object)"),
        ('{"kind": "mlp", "features": 5}', "features 5 differ from ['confidence', "
         "'entropy_nats', 'margin', 'logit_std', 'top5_mass']"),
    ],
)  # fmt: skip
def test_a_predictor_file_of_the_wrong_shape_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, problem: str
) -> None:
    path = tmp_path / "stop.json"
    path.write_text(text)
    assert main([*BASE, "--prompt-ids", "1", "--stop-predictor", str(path)]) == 2
    assert capsys.readouterr().err == f"edgespec draft: --stop-predictor: {path}: {problem}\n"


def _stop_args(predictor: str | None, threshold: float | None = None) -> argparse.Namespace:
    return argparse.Namespace(stop_predictor=predictor, stop_threshold=threshold)


def test_the_bundled_predictor_and_its_threshold() -> None:
    assert stop_policy_from_args(_stop_args(None)) is None
    bundled = stop_policy_from_args(_stop_args("bundled"))
    assert bundled is not None
    assert bundled.to_json() == stop_drafting.load_stop_policy().to_json()
    lowered = stop_policy_from_args(_stop_args("bundled", 0.25))
    assert lowered is not None and lowered.threshold == 0.25


def test_a_bundled_predictor_not_shipped_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stop_drafting, "BUNDLED_STOP_PREDICTOR", "no-such-predictor")
    with pytest.raises(UserInputError) as info:
        stop_policy_from_args(_stop_args("bundled"))
    text = str(info.value)
    start = (
        "--stop-predictor: the bundled predictor no-such-predictor is not shipped in this "
        "installation ("
    )
    assert text.startswith(start) and text.endswith("no-such-predictor.json')")
    assert "No such file or directory" in text
