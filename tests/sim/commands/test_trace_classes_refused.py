"""A trace ``edgespec trace`` wrote (every request of SLO class ``default`` unless
``--slo-classes``) as the workload of a scenario with other classes: one line naming the
file, line and request, the scenario's classes and both ways out, exit status 2, before
any run. Before: ``config field 'workload.trace': request 'gsm8k-0' has unknown slo_class
'default'``, naming neither. The first way out then runs; replacing the classes instead
(``slo_classes={default: 2}``) is refused at the pools' ``slo_mix``, saying what to do."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from edgespec.cli import main
from tests.sim.helpers import sim_refusal

CLASSES = "(its classes: ['bronze', 'gold', 'platinum', 'silver'])"
"""The default scenario's classes (edgespec/data/scenarios/default.yaml), as said."""


def trace_workload(tmp_path: Path, slo_class: str) -> str:
    """``workload=...`` over a two-request trace of ``slo_class``, as edgespec trace writes."""
    path = tmp_path / "gsm8k.jsonl"
    base = {"prompt_tokens": 51, "output_tokens": 4, "slo_class": slo_class}
    lines = [
        {"request_id": f"gsm8k-{i}", "arrival_ms": 10.0 * i, "drafter_id": i, **base}
        for i in range(2)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return f"workload={{kind: trace, trace: {path}}}"


def test_an_edgespec_trace_class_the_scenario_lacks_says_the_file_classes_and_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workload = trace_workload(tmp_path, "default")
    assert sim_refusal([workload], tmp_path, capsys) == (
        f"edgespec sim: config field 'workload.trace': {tmp_path / 'gsm8k.jsonl'}:1: request "
        "'gsm8k-0' has "
        f"slo_class 'default', which slo_classes does not have {CLASSES}; add the class "
        "(slo_classes.default=TOK_S, or null for no target; a trace request keeps its own "
        "class, so no pool's slo_mix needs it) or give the trace the scenario's classes "
        "(edgespec trace --slo-classes bronze,silver,gold,platinum)\n"
    )
    assert not (tmp_path / "out").exists()
    out = tmp_path / "added"  # the first way out, as said
    argv = ["sim", workload, "slo_classes.default=null", "duration_s=1", "--quiet", "--no-plots"]
    assert main([*argv, "--out", str(out)]) == 0
    assert capsys.readouterr().err == ""
    with (out / "requests.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert sorted((r["request_id"], r["slo_class"]) for r in rows) == [
        ("gsm8k-0", "default"),
        ("gsm8k-1", "default"),
    ]


def test_replacing_the_classes_instead_is_refused_at_the_pools_mix_with_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [trace_workload(tmp_path, "default"), "slo_classes={default: 2}"]
    assert sim_refusal(argv, tmp_path, capsys).endswith(
        "config field 'auto_topology.devices[0].slo_mix.bronze': unknown SLO class; known: "
        "['default']; give the pool an slo_mix over those (e.g. {default: 1}) or add a "
        "'bronze' class to slo_classes (slo_classes.bronze=TOK_S adds one to the others; "
        "slo_classes={...} replaces them all)\n"
    )


def test_a_class_close_to_the_scenarios_is_suggested(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = sim_refusal([trace_workload(tmp_path, "glod")], tmp_path, capsys)
    assert f"has slo_class 'glod', which slo_classes does not have {CLASSES} (did " in err
    assert "(did you mean 'gold'?); add the class (slo_classes.glod=TOK_S" in err
