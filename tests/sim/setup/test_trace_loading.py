from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgespec.cli import main
from edgespec.config import ConfigError
from edgespec.sim.setup.lengths import LengthTable
from edgespec.sim.setup.workload import TraceEntry, load_trace, resolve_trace


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
    ("client", "device"),
    [("3", 3), (" 7 ", 3), ("-3", 1), ("edge-12", 3463634589 % 4), ("\u0663", 3),
     ("\u00b2", 3), ("--5", 1), ("3.0", 3)],
)  # fmt: skip
# CRC-32 of "edge-12"; an Arabic-Indic 3 is a decimal digit int() reads; a superscript two
# (str.isdigit() but no decimal digit), "--5" and "3.0" are no whole numbers: each was a
# ValueError traceback (but 3.0's), now its CRC-32
def test_client_ids_map_to_devices(client: str, device: int) -> None:
    assert TraceEntry("r", 0.0, 1, 1, client).device_index(4) == device


def test_a_request_id_given_twice_is_refused(tmp_path: Path) -> None:
    """Its records (and a tree's captured rounds) are found by the id: two requests of one
    id ran, their rows not told apart."""
    row = {"request_id": "a", "arrival_ms": 0, "prompt_tokens": 3, "output_tokens": 5}
    path = _write(tmp_path / "t.jsonl", [row, {**row, "request_id": "b"}, row, {"arrival_ms": 1,
                  "prompt_tokens": 3, "output_tokens": 5}])  # fmt: skip
    with pytest.raises(ConfigError) as info:
        load_trace(path)
    assert str(info.value) == (
        f"{path}:3: request_id: 'a' is the id of {path}:1 already: ids must be unique"
    )


def test_field_aliases_defaults_and_precedence(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "t.jsonl",
        [
            {"arrival_ms": 1, "prompt_len": 1, "output_len": 1},
            {"arrival_ms": 2, "prompt_length": 3, "output_length": [9, 9], "client_id": 5},
        ],
    )  # fmt: skip
    first, second = load_trace(path)
    # no request id: the line names it; no client: device 0 (two spellings of one field
    # are refused: tests/sim/setup/test_trace_fields.py)
    # its base name: the same wherever the file lies (its errors name the path as given)
    assert first == TraceEntry("t.jsonl:1", 0.001, 1, 1, "0")
    assert second == TraceEntry("t.jsonl:2", 0.002, 3, 2, "5")
    assert (first.request_id, second.request_id) == ("t.jsonl:1", "t.jsonl:2")


def test_token_tree_rounds(tmp_path: Path) -> None:
    row = {"arrival_ms": 0, "prompt_tokens": 2, "output_tokens": 5, "draft_tree": "2,2,1"}
    (entry,) = load_trace(_write(tmp_path / "t.jsonl", [{**row, "rounds": [[3, 2], [2, 1]]}]))
    assert entry.tree_rounds == ((3, 2, 3), (2, 1, 2))  # passes not given: depth 3, ≤ nodes
    # the passes captured (edgespec trace writes them): 2,2,1 at γ 4 is 4 deep
    rounds = [[9, 4, 1.0, 2.0, 4], [1, 0, 1.0, 2.0, 2]]  # 2: the pass below 1 node pruned all
    (entry,) = load_trace(_write(tmp_path / "t.jsonl", [{**row, "rounds": rounds}]))
    assert entry.tree_rounds == ((9, 4, 4), (1, 0, 2))
    deep = {**row, "gamma_max": 4, "rounds": [[5, 4], [2, 1]]}
    (entry,) = load_trace(_write(tmp_path / "t.jsonl", [deep]))
    assert entry.tree_rounds == ((5, 4, 4), (2, 1, 2))  # not given: as deep as γ_max 4
    refused = (
        f"{tmp_path / 't.jsonl'}:1: rounds[0]: expected [nodes, accepted, draft_ms, verify_ms, "
        "passes] with 0 <= accepted <= min(nodes, passes), 1 <= passes <= nodes + 1 (0 and 0 "
        "for an empty block; passes: the tree's draft passes; not given, min(nodes, 3))"
    )
    bad: tuple[list[list[float]], ...] = (
        [[5, 4], [2, 1]],  # 4 accepted on a tree of depth 3
        [[5, 3, 1.0, 2.0, 2], [2, 1]],  # more accepted than passes
        [[2, 1, 1.0, 2.0, 4], [2, 1]],  # more passes than its nodes and a pruned depth
        [[2, 0, 1.0, 2.0, 0], [2, 1]],  # nodes drafted in no pass
        [[2, 1, 1.0, 2.0, 1.5], [2, 1]],  # a pass count that is no whole number
    )
    for rounds in bad:
        with pytest.raises(ConfigError) as info:
            load_trace(_write(tmp_path / "t.jsonl", [{**row, "rounds": rounds}]))
        assert str(info.value) == refused, rounds


def test_a_jsonl_path_is_a_file_even_when_missing() -> None:
    assert resolve_trace("no/such.jsonl") == Path("no/such.jsonl")
    with pytest.raises(ConfigError) as info:
        resolve_trace("nope")
    assert str(info.value) == (
        "nope: no such trace file or bundled trace; bundled: ['cnndm', 'gsm8k', 'humaneval', "
        "'sharegpt']"
    )


def test_length_tables() -> None:
    table = LengthTable("t", (1, 5, 9), (1, 2, 3))
    rng = np.random.default_rng(0)
    assert {table.sample(rng) for _ in range(60)} == {(1, 1), (5, 2), (9, 3)}
    for prompts, outputs, problem in [
        ((), (), "needs equal, non-empty columns"),
        ((1, 2), (1,), "needs equal, non-empty columns"),
        ((1,), (0,), "lengths out of range"),
        ((-1,), (1,), "lengths out of range"),
        ((0,), (1,), "lengths out of range"),  # no prompt: one the runtime refuses
    ]:
        with pytest.raises(ValueError) as info:
            LengthTable("t", prompts, outputs)
        assert str(info.value) == f"length table 't': {problem}"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            {"prompt_tokens": 1, "output_tokens": 2},
            "1: arrival_ms: missing field; expected one of "
            "['arrival_ms', 'arrivaltime_ms', 'arrival_time_ms']",
        ),
        (
            {"arrival_ms": -1, "prompt_tokens": 1, "output_tokens": 2},
            "1: arrival_ms: expected a finite number >= 0, got -1",
        ),
        (
            {"arrival_ms": 1, "prompt_tokens": -1, "output_tokens": 2},
            "1: prompt_tokens: expected an integer in [1, 2,147,483,647], got -1",
        ),
        (
            {"arrival_ms": 1, "prompt_tokens": 1, "output_tokens": 0},
            "1: output_tokens: expected an integer in [1, 2,147,483,647], got 0",
        ),
        (  # null was a client named "None", on a device picked by accident
            {"arrival_ms": 1, "prompt_tokens": 1, "output_tokens": 2, "drafter_id": None},
            "1: client_id: expected a string or an integer, got null",
        ),
        (  # a metadata that is no object put the request on device 0
            {"arrival_ms": 1, "prompt_tokens": 1, "output_tokens": 2, "metadata": 5},
            "1: metadata: expected a JSON object",
        ),
        (
            {"arrival_ms": 1, "prompt_tokens": 1, "output_tokens": 2, "request_id": {"a": 1}},
            "1: request_id: expected a string or an integer, got {'a': 1}",
        ),
        (
            {"arrival_ms": 1, "prompt_tokens": 1, "output_tokens": 2, "slo_class": True},
            "1: slo_class: expected a string, got true",
        ),
        (  # an empty prompt, which the runtime (and DSD-Sim) refuse: it was simulated
            {"arrival_ms": 1, "prompt_tokens": [], "output_tokens": 2},
            "1: prompt_tokens: expected an integer in [1, 2,147,483,647], got 0",
        ),
        (
            {"arrival_ms": 1, "prompt_tokens": 1, "output_tokens": 2, "acceptance_seq": [1, 2]},
            "1: acceptance_seq: must be a list of 0/1 integers",
        ),
        ([1, 2], "1: expected a JSON object, got list"),
        (
            {"arrival_ms": True, "prompt_tokens": 1, "output_tokens": 2},
            "1: arrival_ms: expected a finite number >= 0, got true",
        ),
        (
            {"arrival_ms": 1, "prompt_tokens": 1, "output_tokens": True},
            "1: output_tokens: expected an integer >= 1 or a token list, got true",
        ),
        (
            {"arrival_ms": 1, "prompt_tokens": 1, "output_tokens": 2, "acceptance_seq": [1.0]},
            "1: acceptance_seq: must be a list of 0/1 integers",
        ),
        (  # the request named, as LEARN.md says and edgespec train's reader does
            {
                "arrival_ms": 1,
                "prompt_tokens": 1,
                "output_tokens": 1,
                "request_id": "r7",
                "draft_features": [[0.5, float("nan"), 0.1, 0.2, 0.9]],
            },
            "1: draft_features: row 0: entropy_nats is nan, expected a finite number (request r7)",
        ),
        (
            {
                "arrival_ms": 1,
                "prompt_tokens": 1,
                "output_tokens": 1,
                "draft_features": [[float("inf"), 0.1, 0.1, 0.2, 0.9]],
            },
            "1: draft_features: row 0: confidence is inf, expected a finite number",
        ),
    ],
)
def test_bad_trace_lines_name_line_and_field(tmp_path: Path, row: object, message: str) -> None:
    """A trace line is named file:line (then its field), not as a "config field" (``message``
    follows the file's ``PATH:``)."""
    with pytest.raises(ConfigError) as info:
        load_trace(_write(tmp_path / "t.jsonl", [row]))
    assert str(info.value) == f"{tmp_path / 't.jsonl'}:{message}"


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"arrival_ms": 1, "prompt_tokens": 1, "output_tokens": 1}\n{oops\n')
    with pytest.raises(ConfigError) as info:
        load_trace(path)
    assert str(info.value) == (
        f"{path}:2: invalid JSON: Expecting property name enclosed in double quotes"
    )


def test_sim_names_the_trace_line_under_its_config_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ok = {"arrival_ms": 1, "prompt_tokens": 1, "output_tokens": 2}
    path = _write(tmp_path / "t.jsonl", [ok, {**ok, "arrival_ms": -1}])
    args = ["sim", f"workload={{kind: trace, trace: {path}}}", "--quiet", "--no-plots"]
    assert main([*args, "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == (
        "edgespec sim: config field 'workload.trace': "
        f"{path}:2: arrival_ms: expected a finite number >= 0, got -1\n"
    )
    empty = _write(tmp_path / "empty.jsonl", [])
    assert main(["sim", f"workload={{kind: trace, trace: {empty}}}", "--quiet"]) == 2
    assert capsys.readouterr().err == (
        f"edgespec sim: config field 'workload.trace': {empty}: trace holds no requests\n"
    )
