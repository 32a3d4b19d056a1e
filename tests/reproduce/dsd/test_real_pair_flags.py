"""``edgespec reproduce dsd-real-pair``'s cells: refused in one line (exit 2) before any
model loads (each once, RTTs an emulated link takes, the server's port)."""

from __future__ import annotations

import pytest

from edgespec.cli import main


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--rtt-ms", "10,abc"], "--rtt-ms: 'abc' is not a number"),  # was a traceback
        (["--rtt-ms", "nan"], "--rtt-ms: rtt_ms must be a finite number >= 0, got nan"),
        (["--rtt-ms", "1e308"], "--rtt-ms: rtt_ms must be at most 60,000 ms, got 1e+308"),
        (["--rtt-ms", "10,30,10.0"], "--rtt-ms: 10 is given twice"),  # ran the cells twice
        (["--windows", "awc,static,awc"], "--windows: awc is given twice"),
        (["--port", "99999"], "--port must be in 1..65535, got 99999"),  # after the models
    ],
)
def test_cells_are_checked_before_anything_loads(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["reproduce", "dsd-real-pair", "--target", "never-loaded", *flags]) == 2
    assert capsys.readouterr().err == f"edgespec reproduce dsd-real-pair: {message}\n"


def test_a_limit_below_one_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """``--limit -1`` took every prompt but the last (``prompts[:-1]``)."""
    with pytest.raises(SystemExit) as stop:
        main(["reproduce", "dsd-real-pair", "--limit", "-1"])
    assert stop.value.code == 2
    assert capsys.readouterr().err.endswith("error: argument --limit: must be >= 1, got -1\n")
