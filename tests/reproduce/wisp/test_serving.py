"""The real-server comparison's per-class summary and Eq. 21 attribution, on hand-made
rows."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.core.types import RoundRecord
from edgespec.reproduce.wisp.serving import (
    SYSTEMS,
    add_arguments,
    attribution_summary,
    round_log_path,
    system_summary,
)
from edgespec.reproduce.wisp.serving_flags import class_targets


def test_summary_per_class() -> None:
    rows = [
        {"class": "a", "tokens": [1] * 24, "tokens_per_s": 2.5, "e2e_s": 9.6},
        {"class": "a", "tokens": [1] * 24, "tokens_per_s": 1.5, "e2e_s": 16.0},
        {"class": "b", "tokens": [1] * 12, "tokens_per_s": 0.9, "e2e_s": 13.3},
    ]
    out = system_summary(rows, {"a": 2.0, "b": 1.0, "c": 3.0}, seconds=60.0)
    assert out["requests"] == 3 and out["goodput_tokens_per_s"] == 1.0
    assert abs(out["mean_e2e_s"] - (9.6 + 16.0 + 13.3) / 3) < 1e-12
    assert out["classes"]["a"] == {"target_tokens_per_s": 2.0, "requests": 2, "attainment": 0.5}
    assert out["classes"]["b"]["attainment"] == 0.0
    assert out["classes"]["c"] == {"target_tokens_per_s": 3.0, "requests": 0, "attainment": None}


def test_systems_use_the_serve_flags() -> None:
    assert SYSTEMS["sled"][-1] == "--no-prefix-cache"
    assert SYSTEMS["wisp"][:2] == ["--batching", "wisp"]


def test_attribution_from_a_round_log(tmp_path: Path) -> None:
    """Four batches of 1 s on one server, then one of 3 s whose round misses its deadline:
    ρ = 3 / mean(1, 1, 1, 1, 3) = 2.14 > 1.5, compute-dominant; a round that met its
    deadline and one without a deadline are not violations."""
    log = round_log_path(tmp_path / "report.json", "wisp")
    assert log == tmp_path / "report-wisp-rounds.jsonl"
    rows = []
    for i, (end, deadline) in enumerate([(1, None), (2, 5), (3, None), (4, None), (7, 6.5)]):
        verify = 3.0 if end == 7 else 1.0
        record = RoundRecord(
            "s", i, end - verify, float(end), 0.0, 0.0, 0.0, verify, 0.0, 4, 2, 3, 1,
            deadline_s=None if deadline is None else float(deadline),
        )  # fmt: skip
        rows.append(json.dumps({"type": "RoundRecord", **dataclasses.asdict(record)}))
    log.write_text("\n".join(rows) + "\n")
    assert attribution_summary(log) == {
        "rounds_with_deadline": 2,
        "violated": 1,
        "compute_dominant": 1,
        "compute_share": 1.0,
    }


@pytest.mark.parametrize(
    ("clients", "message"),
    [
        ("257", "must be <= 256 (each client is a process), got 257"),
        ("100000", "must be <= 256 (each client is a process), got 100000"),
        ("0", "must be >= 1, got 0"),
    ],
)
def test_clients_outside_one_to_256_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], clients: str, message: str
) -> None:
    """Was unbounded: each client is a drafter process of its own, all started at once."""
    base = ["reproduce", "wisp-serving", "--profile", "p.yaml", "--clients"]
    with pytest.raises(SystemExit) as stop:
        main([*base, clients])
    assert stop.value.code == 2
    assert capsys.readouterr().err.endswith(f"error: argument --clients: {message}\n")
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert parser.parse_args(["--profile", "p.yaml", "--clients", "256"]).clients == 256


def _parsed(*flags: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(["--profile", "p.yaml", *flags])


@pytest.mark.parametrize(
    ("seconds", "message"),
    [
        ("nan", "must be a finite number, got 'nan'"),
        ("inf", "must be a finite number, got 'inf'"),
        ("-1", "must be > 0, got -1"),
        ("0", "must be > 0, got 0"),
        ("3600.5", "must be <= 3,600 s, got 3600.5"),
    ],
)
def test_seconds_outside_zero_to_an_hour_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], seconds: str, message: str
) -> None:
    """Was a plain float: NaN or a negative ran each system for no time."""
    with pytest.raises(SystemExit) as stop:
        _parsed("--seconds", seconds)
    assert stop.value.code == 2
    assert capsys.readouterr().err.endswith(f"error: argument --seconds: {message}\n")
    assert _parsed("--seconds", "3600").seconds == 3600.0


@pytest.mark.parametrize("entry", ["c1", "c1=x", "c1=", "=2", "c.1=2", "c1=0", "c1=-1", "c1=nan"])
def test_a_malformed_class_is_a_usage_error_naming_it(
    capsys: pytest.CaptureFixture[str], entry: str
) -> None:
    """Was split at run time: 'c1' an IndexError, 'c1=x' a ValueError, both tracebacks."""
    with pytest.raises(SystemExit) as stop:
        _parsed("--classes", "a=1", entry)
    assert stop.value.code == 2
    assert capsys.readouterr().err.endswith(
        "error: argument --classes: expected NAME=TOKENS_PER_S (a finite number > 0; no '.' "
        f"or '=' in the name), got {entry!r}\n"
    )


def test_classes_are_taken_as_serve_takes_them() -> None:
    assert _parsed("--classes", "a=0.5", " b = 2 ").classes == ["a=0.5", "b=2"]
    assert _parsed().classes == ["c1=0.5", "c2=1", "c3=2", "c4=3"]


def test_a_class_named_twice_is_refused_before_anything_loads() -> None:
    """The later target silently won (a dict of the entries)."""
    from edgespec.errors import UserInputError
    from edgespec.reproduce.wisp.serving import run

    args = _parsed("--classes", "a=1", "b=2", "a=3")
    with pytest.raises(UserInputError, match=r"^--classes: 'a' is given more than once"):
        run(args)
    assert class_targets(_parsed("--classes", "a=1", "b=2").classes) == {"a": 1.0, "b": 2.0}
