"""``--sweep`` takes every argument up to the next option as a sweep spec, so a plain
override goes before it: ``edgespec sim --help`` and README.md's sweep example say so, and
the refusal of a key swept twice (``--sweep seed=0,1 seed=3``, where ``seed=3`` was meant
as an override) says where an override goes (was: "give all its values in one ... spec"
alone)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
RULE = "--sweep takes every argument up to the next option"


def test_a_key_swept_twice_says_overrides_go_before_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["sim", "--sweep", "seed=0,1", "seed=3", "--quiet", "--out", str(tmp_path / "s")]
    assert main(args) == 2
    assert capsys.readouterr().err == (
        "edgespec sim: config field 'seed': swept twice; give all its values in one "
        "key=v1,v2,... spec (--sweep takes every argument up to the next option: a plain "
        "override goes before --sweep)\n"
    )
    assert not (tmp_path / "s").exists()


def test_sim_help_says_what_sweep_takes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["sim", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert (
        "It takes every argument up to the next option as a sweep spec, a one-value key=v "
        "too (a sweep column): plain overrides go before --sweep"
    ) in text


def test_readme_shows_an_override_before_sweep() -> None:
    readme = (ROOT / "README.md").read_text()
    assert (
        f"edgespec sim duration_s=30 --sweep seed=0,1,2   # {RULE}: overrides go before it"
    ) in readme
