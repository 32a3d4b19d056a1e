"""``edgespec sim`` / ``bench sim`` overrides (edgespec.config.overrides.check_repeats): a
key given twice, or a section given whole after an override inside it, is one line naming
both overrides, exit status 2, before any run; a field after its whole section refines it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from edgespec.cli import main
from edgespec.config import OverrideError, check_repeats
from tests.sim.helpers import tiny_scenario


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_scenario(duration_s=1.0)))
    return path


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["seed=1", "seed=2"],
            "override 'seed=2': seed is given twice (first as 'seed=1'); give it once",
        ),
        (
            ["a.b=1", "name=x", " a.b =2"],
            "override ' a.b =2': a.b is given twice (first as 'a.b=1'); give it once",
        ),
        (
            ["workload.rate_per_s=3", "workload={kind: poisson}"],
            "override 'workload={kind: poisson}': workload given whole would replace the "
            "earlier 'workload.rate_per_s=3' inside it; give workload first",
        ),
        (
            ["workload={kind: poisson}", "workload.rate_per_s=3", "workload.rate_per_s=4"],
            "override 'workload.rate_per_s=4': workload.rate_per_s is given twice (first as "
            "'workload.rate_per_s=3'); give it once",
        ),
    ],
)  # fmt: skip
def test_a_repeated_override_is_one_line_exit_2(
    overrides: list[str],
    message: str,
    scenario_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "out"
    args = ["sim", str(scenario_file), *overrides, "--quiet", "--no-plots", "--out", str(out)]
    assert main(args) == 2
    assert not out.exists()
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", f"edgespec sim: {message}\n")


def test_bench_sim_refuses_a_repeated_override(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "sim", "seed=1", "seed=2"]) == 2
    assert capsys.readouterr().err == (
        "edgespec bench sim: "
        "override 'seed=2': seed is given twice (first as 'seed=1'); give it once\n"
    )


def test_a_field_after_its_whole_section_refines_it(scenario_file: Path, tmp_path: Path) -> None:
    """docs/SIMULATOR.md: switch a kind by giving the whole section; a later, narrower
    override refines it (the order `apply_overrides` applies them in)."""
    out = tmp_path / "out"
    whole = "workload={kind: poisson, rate_per_s: 5}"
    args = ["sim", str(scenario_file), whole, "workload.rate_per_s=3", "--quiet", "--no-plots"]
    assert main([*args, "--out", str(out)]) == 0
    written = yaml.safe_load((out / "scenario.yaml").read_text())
    assert written["workload"] == {"kind": "poisson", "rate_per_s": 3}


def test_distinct_keys_and_sibling_fields_pass() -> None:
    check_repeats(["a.b=1", "a.c=2", "a.bb=3", "ab=4", "policies.window.params.gamma=4"])
    check_repeats(["policies.window.params.gamma=4", "policies.window.name=awc"])
    with pytest.raises(OverrideError) as error:
        check_repeats(["a.b.c=1", "a.d=2", "a.b=3"])
    assert str(error.value) == (
        "override 'a.b=3': a.b given whole would replace the earlier 'a.b.c=1' inside it; "
        "give a.b first"
    )
