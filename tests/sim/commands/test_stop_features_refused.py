"""A stop predictor's policy with no confusion stand-in and a request with no draft features
to replay (``edgespec.sim.setup.sources.check_replayable``): one line at ``stop_predictor``
naming the trace, line and request id the file gives (or the acceptance kind that has
none), exit status 2, before any run and any run folder. Before, ``edgespec sim`` ran and
crashed with a traceback (exit 1, no run folder): ``ValueError: stop predictor: request r0
has no draft features to replay and the scenario gives no confusion_tpr/confusion_fpr
stand-in``, naming the simulator's own request id."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from tests.sim.helpers import hand_trace_scenario, sim_refusal

STOP = "stop_predictor.policy.name=mlp"
SAID = "config field 'stop_predictor': policy 'mlp' replays each request's draft_features, and "
REMEDY = (
    "; give confusion_tpr and confusion_fpr (the stand-in for requests without them) or "
    "replay traces that have draft_features (acceptance.kind: trace, or a trace workload; "
    "edgespec trace records them for a neural --draft, not for --draft ngram)\n"
)


@pytest.fixture(autouse=True)
def never_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any run is a failure: each refusal here comes before the first."""

    def never(*args: Any) -> None:
        raise AssertionError("a run started")

    monkeypatch.setattr("edgespec.sim.commands.run.run_scenario_dict", never)
    monkeypatch.setattr("edgespec.sim.setup.build.build_fleet", never)


def refused(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    err = sim_refusal(argv, tmp_path, capsys)
    assert not (tmp_path / "out").exists()
    return err


def request(request_id: str, features: bool, **fields: Any) -> dict[str, Any]:
    """One line of an ``edgespec trace`` file: 4 output tokens, with or without the
    features its neural drafts record (``--draft ngram`` records none)."""
    line = {"request_id": request_id, "arrival_ms": 0.0, "prompt_tokens": 5,
            "output_tokens": 4, "drafter_id": 0, "slo_class": "default",
            "acceptance_seq": [1, 1, 0, 1], **fields}  # fmt: skip
    if features:
        line["draft_features"] = [[0.9, 0.1, 0.5, 2.0, 0.9]] * 4
    return line


def write(path: Path, lines: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


@pytest.mark.parametrize(
    ("acceptance", "kind"),
    [
        (["acceptance.kind=iid", "acceptance.alpha=0.8"], "iid"),
        (["acceptance.kind=decay"], "decay"),
    ],
)
def test_drawn_acceptance_has_no_features_to_replay(
    acceptance: list[str], kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert refused([*acceptance, STOP], tmp_path, capsys) == (
        f"edgespec sim: {SAID}acceptance.kind {kind} draws each round's outcome, with none to "
        f"replay{REMEDY}"
    )


def test_an_acceptance_trace_without_features_is_named_with_its_line_and_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The n-gram drafter's trace: its second line has no features; the pool gives every
    sequence to some request, so the first line's features do not make it replayable."""
    trace = write(tmp_path / "ngram.jsonl", [request("gsm8k-0", True), request("gsm8k-1", False)])
    assert refused([f"acceptance.traces=[{trace}]", STOP], tmp_path, capsys) == (
        f"edgespec sim: {SAID}acceptance.traces[0] {trace}:2: request 'gsm8k-1' has none{REMEDY}"
    )


def test_a_workload_trace_request_without_features_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = hand_trace_scenario(tmp_path, [request("a", True), request("b", False)], gamma=4)
    data["stop_predictor"] = {"policy": {"name": "mlp"}}
    (tmp_path / "s.yaml").write_text(json.dumps(data))
    assert refused([str(tmp_path / "s.yaml")], tmp_path, capsys) == (
        f"edgespec sim: {tmp_path / 's.yaml'}:1: {SAID}workload.trace "
        f"{tmp_path / 'trace.jsonl'}:2: request 'b' has none{REMEDY}"
    )


def test_a_workload_trace_request_without_a_sequence_under_iid_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [request("a", True), request("b", False, acceptance_seq=None)]
    data = hand_trace_scenario(tmp_path, lines, gamma=4)
    data["acceptance"] = {"kind": "iid", "alpha": 0.5}
    data["stop_predictor"] = {"policy": {"name": "mlp"}}
    (tmp_path / "s.yaml").write_text(json.dumps(data))
    trace = tmp_path / "trace.jsonl"
    assert refused([str(tmp_path / "s.yaml")], tmp_path, capsys) == (
        f"edgespec sim: warning: workload.trace ({trace}): 1 of its 2 requests carry an "
        "acceptance_seq, which acceptance.kind iid does not replay (its model draws every "
        "round's outcome): set acceptance.kind: trace to replay them\n"
        f"edgespec sim: {tmp_path / 's.yaml'}:1: {SAID}workload.trace "
        f"{trace}:2: request 'b' has no acceptance_seq: acceptance.kind iid "
        f"draws its rounds' outcomes, with none to replay{REMEDY}"
    )


def test_a_sweep_point_without_features_is_refused_before_the_first_point_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first point (the bundled traces, every one with features) would run."""
    err = refused([STOP, "--sweep", "acceptance.kind=trace,iid"], tmp_path, capsys)
    assert err == (
        "edgespec sim: config field 'stop_predictor': at sweep point 2 of 2 "
        "(acceptance.kind=iid): policy 'mlp' replays each request's draft_features, and "
        f"acceptance.kind iid draws each round's outcome, with none to replay{REMEDY}"
    )


def test_the_stand_in_or_features_everywhere_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neither is refused: the confusion stand-in for drawn acceptance, and a workload
    trace whose every request has features."""
    monkeypatch.undo()  # runs allowed
    args = ["--quiet", "--no-plots", "duration_s=0.5"]
    stand_in = ["stop_predictor.confusion_tpr=0.9", "stop_predictor.confusion_fpr=0.2"]
    iid = ["acceptance.kind=iid", STOP, *stand_in]
    assert main(["sim", *iid, *args, "--out", str(tmp_path / "iid")]) == 0
    data = hand_trace_scenario(tmp_path, [request("a", True), request("b", True)], gamma=4)
    data["stop_predictor"] = {"policy": {"name": "mlp"}}
    (tmp_path / "s.yaml").write_text(json.dumps(data))
    assert main(["sim", str(tmp_path / "s.yaml"), *args, "--out", str(tmp_path / "t")]) == 0
