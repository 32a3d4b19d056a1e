from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.config import ConfigError
from edgespec.sim.workload import TraceEntry, load_trace


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_edgespec_schema(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "t.jsonl",
        [
            {"request_id": "r1", "arrival_ms": 12.5, "prompt_tokens": 27, "output_tokens": 94,
             "drafter_id": 38, "slo_class": "gold", "acceptance_seq": [1, 0, 1]},
            {"request_id": "r0", "arrival_ms": 5.3, "prompt_tokens": 10, "output_tokens": 3,
             "drafter_id": 2},
        ],
    )  # fmt: skip
    assert load_trace(path) == (
        TraceEntry("r0", 0.0053, 10, 3, "2"),
        TraceEntry("r1", 0.0125, 27, 94, "38", "gold", (1, 0, 1)),
    )


def test_dsd_sim_schema(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "dsd.jsonl",
        [
            {"request_id": 7, "arrivaltime_ms": 5.3, "prompt_length": 27, "target_tokens": 94,
             "metadata": {"client_id": "edge-12"}, "acceptance_seq": [1, 1, 0]},
            {"id": "x", "arrival_time_ms": 8, "prompt_tokens": [5, 6, 7],
             "target_tokens": [1, 2], "metadata": {"client_id": 3}},
        ],
    )  # fmt: skip
    first, second = load_trace(path)
    assert first == TraceEntry("7", 0.0053, 27, 94, "edge-12", None, (1, 1, 0))
    assert second == TraceEntry("x", 0.008, 3, 2, "3", None, None)
    assert second.device_index(2) == 1
    assert first.device_index(1000) == first.device_index(1000) < 1000


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            {"prompt_tokens": 1, "output_tokens": 2},
            "t.jsonl:1: arrival_ms: missing field; expected one of "
            "['arrival_ms', 'arrivaltime_ms', 'arrival_time_ms']",
        ),
        (
            {"arrival_ms": -1, "prompt_tokens": 1, "output_tokens": 2},
            "t.jsonl:1: arrival_ms: expected a number >= 0, got -1",
        ),
        (
            {"arrival_ms": 1, "prompt_tokens": -1, "output_tokens": 2},
            "t.jsonl:1: prompt_tokens: expected an integer >= 0 or a token list, got -1",
        ),
        (
            {"arrival_ms": 1, "prompt_tokens": 1, "output_tokens": 0},
            "t.jsonl:1: output_tokens: expected an integer >= 1 or a token list, got 0",
        ),
        (
            {"arrival_ms": 1, "prompt_tokens": 1, "output_tokens": 2, "acceptance_seq": [1, 2]},
            "t.jsonl:1: acceptance_seq: must be a list of 0/1 integers",
        ),
        ([1, 2], "t.jsonl:1: expected a JSON object, got list"),
    ],
)
def test_bad_trace_lines_name_line_and_field(tmp_path: Path, row: object, message: str) -> None:
    """A trace line is named file:line (then its field), not as a "config field"."""
    with pytest.raises(ConfigError) as info:
        load_trace(_write(tmp_path / "t.jsonl", [row]))
    assert str(info.value) == message


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"arrival_ms": 1, "prompt_tokens": 1, "output_tokens": 1}\n{oops\n')
    with pytest.raises(ConfigError) as info:
        load_trace(path)
    assert str(info.value) == (
        "t.jsonl:2: invalid JSON: Expecting property name enclosed in double quotes"
    )


def test_sim_names_the_trace_line_under_its_config_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ok = {"arrival_ms": 1, "prompt_tokens": 1, "output_tokens": 2}
    path = _write(tmp_path / "t.jsonl", [ok, {**ok, "arrival_ms": -1}])
    args = ["sim", "workload.kind=trace", f"workload.trace={path}", "--quiet", "--no-plots"]
    assert main([*args, "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == (
        "edgespec sim: config field 'workload.trace': "
        "t.jsonl:2: arrival_ms: expected a number >= 0, got -1\n"
    )
    empty = _write(tmp_path / "empty.jsonl", [])
    assert main(["sim", "workload.kind=trace", f"workload.trace={empty}", "--quiet"]) == 2
    assert capsys.readouterr().err == (
        f"edgespec sim: config field 'workload.trace': {empty}: trace holds no requests\n"
    )
