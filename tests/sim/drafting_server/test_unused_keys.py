"""A drafting-server key that the chosen setting does not read is refused before the run,
naming the key, the setting and what to do (a static batch size under another batching
rule, ``max_spec_len`` beside a fixed ``spec_len``, the verifier's limits without a
verifier policy); ``slo_tokens_per_s`` without a policy counts the plan order's deadline
misses, and the report prints them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.policies.registry import BATCHING

FAST = ["pipeline.num_users=5", "pipeline.max_output_tokens=100", "--quiet"]
NO_POLICY = (
    "applies only to a verifier policy (policy is null: the plan's order, one pass per batch); "
    f"drop it, or name a batching policy: {sorted(BATCHING)}"
)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["pipeline.planner.static_batch_size=7"],
            "'pipeline.planner.static_batch_size': applies only to batching: static "
            "(batching is dp); drop it, or set batching: static",
        ),
        (
            ["pipeline.planner.batching=heuristic", "pipeline.planner.static_batch_size=2"],
            "'pipeline.planner.static_batch_size': applies only to batching: static "
            "(batching is heuristic); drop it, or set batching: static",
        ),
        (
            ["pipeline.planner.spec_len=7", "pipeline.planner.max_spec_len=4"],
            "'pipeline.planner.max_spec_len': applies only to spec_len: null, the best l of "
            "1..max_spec_len (spec_len is 7, a fixed l); drop one of the two",
        ),
        (
            ["pipeline.verifier.max_batch_size=2"],
            f"'pipeline.verifier.max_batch_size': {NO_POLICY}",
        ),
        (
            ["pipeline.verifier.max_batch_tokens=64"],
            f"'pipeline.verifier.max_batch_tokens': {NO_POLICY}",
        ),
        (
            ["pipeline.verifier.max_context_tokens=64"],
            f"'pipeline.verifier.max_context_tokens': {NO_POLICY}",
        ),
    ],
)
def test_a_key_its_setting_does_not_read_is_refused_before_the_run(
    overrides: list[str],
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def never(*args: object) -> object:
        raise AssertionError("no planning may start")

    monkeypatch.setattr("edgespec.sim.drafting_server.build.run_pipeline", never)
    out = tmp_path / "run"
    assert main(["sim", "zhu-pipeline", *overrides, *FAST, "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"edgespec sim: config field {message}\n"
    assert not out.exists()


@pytest.mark.parametrize(
    "overrides",
    [
        ["pipeline.planner.batching=static", "pipeline.planner.static_batch_size=2"],
        ["pipeline.planner.spec_len=3"],  # the bundled file's max_spec_len: 10 is the default
        ["pipeline.planner.max_spec_len=3"],
        ["pipeline.verifier.policy.name=fcfs", "pipeline.verifier.max_batch_size=2"],
    ],
)
def test_the_same_keys_where_they_are_read_run(overrides: list[str], tmp_path: Path) -> None:
    assert main(["sim", "zhu-pipeline", *overrides, *FAST, "--out", str(tmp_path / "r")]) == 0


def test_the_plan_orders_deadline_misses_are_printed_with_a_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    args = ["sim", "zhu-pipeline", "pipeline.verifier.slo_tokens_per_s=30", *FAST]
    assert main([*args, "--out", str(out)]) == 0
    simulated = json.loads((out / "pipeline.json").read_text())["simulated"]
    assert simulated["deadline_misses"] > 0
    line = capsys.readouterr().out.splitlines()[4]
    assert line == (
        f"MBS schedule: the plan's order, one pass per batch ({simulated['num_passes']} "
        f"passes); {simulated['deadline_misses']} of {simulated['num_blocks']} blocks past "
        "their deadline"
    )
    assert main(["sim", "zhu-pipeline", *FAST, "--out", str(tmp_path / "none")]) == 0
    assert capsys.readouterr().out.splitlines()[4].endswith(" passes)")  # no target: no count
