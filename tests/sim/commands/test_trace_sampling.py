"""A replayed trace captured otherwise than the scenario samples (another temperature, or
other cuts when it samples) is said once on stderr before the run
(edgespec.sim.commands.checks.trace_sampling_warnings): its rounds accept as the capture's
did, greedy or sampled (``edgespec trace --temperature``); the scenario's temperature alone
changed the bytes on the wire, silently."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgespec.cli import main
from edgespec.config import ConfigError
from edgespec.sim.commands.checks import trace_sampling_warnings
from edgespec.sim.setup.scenario import scenario_from_dict
from tests.sim.helpers import tiny_scenario

QUIET = ["--quiet", "--no-plots"]
ADVICE = "its rounds accept as the capture's did (edgespec trace --temperature {} captures as "


def _trace(path: Path, temperature: float | None, with_seq: bool = True, **cuts: float) -> Path:
    rows: list[dict[str, Any]] = [
        {"request_id": f"r{i}", "arrival_ms": 10.0 * i, "prompt_tokens": 20, "output_tokens": 4}
        for i in range(3)
    ]
    for row in rows:
        if with_seq:
            row["acceptance_seq"] = [1, 0, 1, 1]
        if temperature is not None:
            row["temperature"] = temperature
        row.update(cuts)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _warnings(**sections: Any) -> list[str]:
    return trace_sampling_warnings(scenario_from_dict(tiny_scenario(**sections)))


def test_a_pool_trace_of_another_temperature_is_named_with_both(tmp_path: Path) -> None:
    greedy, sampled = _trace(tmp_path / "g.jsonl", None), _trace(tmp_path / "s.jsonl", 0.8)
    acceptance = {"kind": "trace", "traces": [str(greedy), str(sampled)]}
    assert _warnings(acceptance=acceptance, temperature=0.8) == [
        f"warning: acceptance.traces[0] ({greedy}): captured greedy, replayed at temperature "
        f"0.8: {ADVICE.format('0.8')}the scenario samples)"
    ]
    assert _warnings(acceptance=acceptance) == [
        f"warning: acceptance.traces[1] ({sampled}): captured at temperature 0.8, replayed "
        f"greedy: {ADVICE.format('0')}the scenario samples)"
    ]
    assert _warnings(acceptance={"kind": "iid", "alpha": 0.5}, temperature=0.8) == []


def test_a_trace_cut_otherwise_than_the_scenario_samples_is_named_with_both(
    tmp_path: Path,
) -> None:
    cut = _trace(tmp_path / "k.jsonl", 0.8, top_k=40)
    acceptance = {"kind": "trace", "traces": [str(cut)]}
    advice = "its rounds accept as the capture's did (edgespec trace --temperature 0.8"
    assert _warnings(acceptance=acceptance, temperature=0.8) == [
        f"warning: acceptance.traces[0] ({cut}): captured at temperature 0.8 with top-k 40, "
        f"replayed at temperature 0.8: {advice} captures as the scenario samples)"
    ]
    assert _warnings(acceptance=acceptance, temperature=0.8, top_k=40) == []
    assert _warnings(acceptance=acceptance, temperature=0.8, top_k=40, top_p=0.9) == [
        f"warning: acceptance.traces[0] ({cut}): captured at temperature 0.8 with top-k 40, "
        f"replayed at temperature 0.8 with top-k 40, top-p 0.9: {advice} --top-k 40 "
        "--top-p 0.9 captures as the scenario samples)"
    ]
    # greedy decoding takes no cut: a greedy scenario's are not compared
    greedy = {"kind": "trace", "traces": [str(_trace(tmp_path / "g.jsonl", None))]}
    assert _warnings(acceptance=greedy, top_k=40, min_p=0.1) == []


def test_a_trace_cut_out_of_range_is_refused_at_its_line_and_field(tmp_path: Path) -> None:
    bad = _trace(tmp_path / "bad.jsonl", 0.8, top_p=1.5)
    with pytest.raises(ConfigError) as info:
        _warnings(acceptance={"kind": "trace", "traces": [str(bad)]}, temperature=0.8)
    where = f"config field 'acceptance.traces[0]': {bad}:1"
    assert str(info.value) == f"{where}: top_p: must be in (0, 1], got 1.5"


def test_the_bundled_traces_are_one_line_and_only_when_a_request_draws_from_them(
    tmp_path: Path,
) -> None:
    bundled = "warning: the bundled acceptance traces (edgespec/data/traces/): captured greedy"
    [line] = _warnings(acceptance={"kind": "trace"}, temperature=0.5)
    assert line.startswith(f"{bundled}, replayed at temperature 0.5: ")
    assert _warnings(acceptance={"kind": "trace"}) == []  # greedy: they are greedy captures
    own = _trace(tmp_path / "own.jsonl", 0.5)  # every request replays its own sequence
    workload = {"kind": "trace", "trace": str(own)}
    assert _warnings(acceptance={"kind": "trace"}, workload=workload, temperature=0.5) == []
    assert _warnings(acceptance={"kind": "trace"}, workload=workload) == [
        f"warning: workload.trace ({own}): captured at temperature 0.5, replayed greedy: "
        f"{ADVICE.format('0')}the scenario samples)"
    ]
    none = _trace(tmp_path / "none.jsonl", None, with_seq=False)  # they draw from the pool
    workload = {"kind": "trace", "trace": str(none)}
    [line] = _warnings(acceptance={"kind": "trace"}, workload=workload, temperature=0.5)
    assert line.startswith(bundled)


def test_edgespec_sim_says_it_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sampled = _trace(tmp_path / "s.jsonl", 0.8)
    data = tiny_scenario(duration_s=2.0, acceptance={"kind": "trace", "traces": [str(sampled)]})
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    assert main(["sim", str(tmp_path / "s.yaml"), *QUIET, "--out", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    assert err.startswith(
        f"edgespec sim: warning: acceptance.traces[0] ({sampled}): captured at temperature "
        "0.8, replayed greedy: "
    )
    again = ["--out", str(tmp_path / "again")]
    assert main(["sim", str(tmp_path / "s.yaml"), "temperature=0.8", *QUIET, *again]) == 0
    assert "warning" not in capsys.readouterr().err


def test_a_workload_traces_acceptance_unread_by_the_model_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A workload trace whose requests carry their acceptance_seq, under the default
    acceptance model (decay) or iid, which do not read them: said before the run. The
    captured acceptance was replaced by the model's without a word (a simulator audit: a
    request that never accepted showed 54% acceptance)."""
    from edgespec.sim.commands.checks import unread_acceptance_warning

    path = _trace(tmp_path / "t.jsonl", None)
    workload = {"kind": "trace", "trace": str(path)}
    expected = (f"warning: workload.trace ({path}): 3 of its 3 requests carry an "
                "acceptance_seq, which acceptance.kind {} does not replay (its model draws "
                "every round's outcome): set acceptance.kind: trace to replay them")  # fmt: skip
    for kind in ("decay", "iid"):
        scenario = scenario_from_dict(tiny_scenario(workload=workload, acceptance={"kind": kind}))
        assert unread_acceptance_warning(scenario) == expected.format(kind)
    replayed = tiny_scenario(workload=workload, acceptance={"kind": "trace"})
    assert unread_acceptance_warning(scenario_from_dict(replayed)) is None
    bare = _trace(tmp_path / "bare.jsonl", None, with_seq=False)
    plain = tiny_scenario(workload={"kind": "trace", "trace": str(bare)})
    assert unread_acceptance_warning(scenario_from_dict(plain)) is None
    scenario_file = tmp_path / "s.yaml"
    scenario_file.write_text(yaml.safe_dump(tiny_scenario(workload=workload)))
    assert main(["sim", str(scenario_file), "--out", str(tmp_path / "run"), *QUIET]) == 0
    assert expected.format("iid") in capsys.readouterr().err  # tiny_scenario's model
