"""A misspelt bundled name gets the closest one, as a misspelt field does
(edgespec.errors.did_you_mean): a length table (``workload.dataset=gsm8``) and a trace
(``acceptance.traces``, ``workload.trace``), which also lists the bundled traces; and a file
that is no scenario (a run's metrics.json) is refused at its first unknown key in the
file, where the alphabetically first was named (``aal``, far down a metrics.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.sim.helpers import sim_refusal, tiny_scenario

TRACES = "['cnndm', 'gsm8k', 'humaneval', 'sharegpt']"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "workload.dataset=gsm8",
            "'workload.dataset': no length table 'gsm8'; known: ['gsm8k', 'humaneval', "
            "'sharegpt'] (did you mean 'gsm8k'?)",
        ),
        (
            "acceptance={kind: trace, traces: [gsm8]}",
            f"'acceptance.traces[0]': gsm8: no such trace file or bundled trace; bundled: "
            f"{TRACES} (did you mean 'gsm8k'?)",
        ),
        (
            "acceptance={kind: trace, traces: [nope]}",  # none close: the list alone
            f"'acceptance.traces[0]': nope: no such trace file or bundled trace; bundled: {TRACES}",
        ),
        (
            "workload={kind: trace, trace: sharegtp}",
            f"'workload.trace': sharegtp: no such trace file or bundled trace; bundled: "
            f"{TRACES} (did you mean 'sharegpt'?)",
        ),
    ],
)
def test_a_misspelt_bundled_name_gets_the_closest(
    override: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "s.yaml"
    data = tiny_scenario(duration_s=1.0)
    del data["workload"]  # a closed loop drawing from a length table
    file.write_text(yaml.safe_dump(data))
    assert sim_refusal([str(file), override], tmp_path, capsys) == (
        f"edgespec sim: config field {message}\n"
    )


def test_a_file_that_is_no_scenario_is_refused_at_its_first_unknown_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "metrics.json"
    metrics = {"duration_s": 60.0, "num_servers": 4, "num_requests": 519, "aal": 3.1}
    file.write_text(json.dumps(metrics, indent=2))
    assert sim_refusal([str(file)], tmp_path, capsys) == (
        f"edgespec sim: {file}:3: config field 'num_servers': unknown field; known: "
        "['acceptance', 'auto_topology', 'cloud_only_draft_pass', 'deadline_rule', "
        "'draft_probs', 'dsdsim_compat', 'duration_s', 'fast_path', 'fused_rounds', 'links', "
        "'min_p', 'mode', 'name', 'policies', 'record_rounds', 'seed', 'slo_classes', "
        "'stop_predictor', 'system', 'temperature', 'top_k', 'top_p', 'verification', "
        "'workload']\n"
    )
