"""A trace line's fields (edgespec.sim.setup.trace_fields): a field neither schema has is
refused naming the file, line, field and the closest known one, as is one field given
under two spellings; every bundled trace, and every field ``edgespec trace`` writes, loads."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgespec.cli import main
from edgespec.config import ConfigError
from edgespec.learn.traces.records import TraceRecord, TraceRound, record_to_json
from edgespec.sim.setup.trace_fields import TRACE_KEYS
from edgespec.sim.setup.workload import bundled_traces, load_trace, parse_trace_record
from tests.sim.helpers import tiny_scenario

ROW = {"request_id": "r0", "arrival_ms": 0, "prompt_tokens": 4, "output_tokens": 3}
KNOWN = sorted(TRACE_KEYS)


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _line(path: Path, text: str) -> int:
    return path.read_text().splitlines().index(text) + 1


def _refused(tmp_path: Path, row: dict[str, Any]) -> str:
    path = _write(tmp_path / "t.jsonl", [ROW, row])
    with pytest.raises(ConfigError) as info:
        load_trace(path)
    return str(info.value)


@pytest.mark.parametrize(
    ("field", "close"),
    [
        ("acceptance_sq", " (did you mean 'acceptance_seq'?)"),
        ("slo_clas", " (did you mean 'slo_class'?)"),
        ("arival_ms", " (did you mean 'arrival_ms'?)"),
        ("colour", ""),
    ],
)
def test_an_unknown_field_is_refused_with_its_line_and_the_closest_known_one(
    field: str, close: str, tmp_path: Path
) -> None:
    assert _refused(tmp_path, {**ROW, field: [1, 0, 1]}) == (
        f"{tmp_path / 't.jsonl'}:2: {field}: unknown field; known: {KNOWN}{close}"
    )


@pytest.mark.parametrize(
    ("given", "what", "first", "second"),
    [
        ({"arrivaltime_ms": 5}, "the arrival time", "arrival_ms", "arrivaltime_ms"),
        ({"prompt_length": 5}, "the prompt length", "prompt_tokens", "prompt_length"),
        ({"target_tokens": 5}, "the output length", "output_tokens", "target_tokens"),
        ({"id": "x"}, "the request id", "request_id", "id"),
        ({"drafter_id": 1, "metadata": {"client_id": 2}}, "the device", "drafter_id",
         "metadata.client_id"),
        ({"metadata": {"client_id": 2}, "client_id": 1}, "the device", "metadata.client_id",
         "client_id"),
    ],
)  # fmt: skip
def test_a_field_given_under_two_spellings_is_refused(
    given: dict[str, Any], what: str, first: str, second: str, tmp_path: Path
) -> None:
    assert _refused(tmp_path, {**ROW, **given}) == (
        f"{tmp_path / 't.jsonl'}:2: {second}: gives {what}, which {first} gives too; keep one "
        "of them"
    )


def test_a_workload_trace_with_a_misspelt_field_is_refused_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "t.jsonl", [{**ROW, "acceptance_sq": [1, 1, 0]}])
    data = tiny_scenario(duration_s=1.0)
    data["workload"] = {"kind": "trace", "trace": "t.jsonl"}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    line = _line(tmp_path / "s.yaml", "  trace: t.jsonl")
    assert main(["sim", "s.yaml", "--quiet", "--no-plots", "--out", "run"]) == 2
    assert capsys.readouterr().err == (
        f"edgespec sim: s.yaml:{line}: config field 'workload.trace': {tmp_path / 't.jsonl'}:1: "
        f"acceptance_sq: unknown field; known: {KNOWN} (did you mean 'acceptance_seq'?)\n"
    )
    assert not (tmp_path / "run").exists()


def test_an_acceptance_trace_with_a_misspelt_field_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / "t.jsonl", [{**ROW, "slo_clas": "x", "acceptance_seq": [1]}])
    data = tiny_scenario(duration_s=1.0, acceptance={"kind": "trace", "traces": [str(path)]})
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(data))
    line = _line(scenario, f"  - {path}")
    assert main(["sim", str(scenario), "--quiet", "--out", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err == (
        f"edgespec sim: {scenario}:{line}: config field 'acceptance.traces[0]': {path}:1: "
        "slo_clas: unknown "
        f"field; known: {KNOWN} (did you mean 'slo_class'?)\n"
    )


def test_every_bundled_trace_loads() -> None:
    names = [p.stem for p in bundled_traces()]
    assert names == ["cnndm", "gsm8k", "humaneval", "sharegpt"]
    for path in bundled_traces():
        assert len(load_trace(path)) > 0


ROWS = tuple((0.5, 1.25, 0.1, 2.0, 0.9) for _ in range(3))


def _written(**changes: Any) -> dict[str, Any]:
    """A line as ``edgespec trace`` writes it, every optional field given."""
    record = TraceRecord(
        request_id="r", arrival_ms=1.0, prompt_tokens=4, output_tokens=3, drafter_id=0,
        slo_class="gold", dataset="gsm8k", draft_model="d", target_model="t", gamma_max=2,
        acceptance_seq=(1, 0, 1),
        rounds=(TraceRound(2, 1, 1.0, 2.0, 2), TraceRound(1, 1, 1.0, 2.0)),
        draft_features=ROWS, rejection_features=((1, ROWS[:1]),), sd_ms=3.0,
        target_only_ms=4.0, assisted_ms=5.0, lossless=True,
    )  # fmt: skip
    return record_to_json(dataclasses.replace(record, **changes))


def test_every_field_edgespec_trace_writes_is_known_and_loads() -> None:
    chain, tree = _written(), _written(draft_tree="2,1")
    assert set(chain) | set(tree) <= TRACE_KEYS
    assert {"draft_tree", "rejection_features", "lossless", "assisted_ms"} <= set(tree)
    assert parse_trace_record(chain, "t.jsonl:1").rejection_features == {1: ROWS[:1]}
    assert parse_trace_record(tree, "t.jsonl:2").tree_rounds == ((2, 1, 2), (1, 1, 1))


DSDSIM_LINES = (
    # ../shared/data/dsdsim/gsm8k_trace.jsonl's first line (DSD-Sim's traces/ at 1e746d8)
    {"request_id": "gsm8k_00000", "arrival_ms": 0.0, "prompt_tokens": 36, "target_tokens": 114,
     "device_tier": "default", "metadata": {"client_id": "client_000"}},
    # every field of DSD-Sim's TraceRecord.to_dict (src/trace/types.py)
    {"request_id": "r1", "arrival_ms": 25.0, "prompt_tokens": 41, "target_tokens": 178,
     "draft_id": "d7", "device_tier": "edge", "slo_class": "gold", "mode_hint": "fused",
     "seed": 3, "metadata": {"note": "x"}},
)  # fmt: skip


def test_dsdsims_own_trace_fields_load() -> None:
    """The field check refused DSD-Sim's ``device_tier`` (so the GSM8K trace of the DSD
    paper, in DSD-Sim's schema, no longer loaded), ``mode_hint`` and ``seed``; its
    ``draft_id``, the request's drafter, was read by nothing."""
    first, full = (parse_trace_record(r, f"t.jsonl:{i}") for i, r in enumerate(DSDSIM_LINES, 1))
    assert (first.client_id, first.num_output_tokens) == ("client_000", 114)
    assert (full.client_id, full.slo_class, full.num_output_tokens) == ("d7", "gold", 178)


def test_a_drafter_given_twice_is_refused() -> None:
    row = {**ROW, "drafter_id": 1, "draft_id": "d7"}
    with pytest.raises(ConfigError) as info:
        parse_trace_record(row, "t.jsonl:1")
    assert str(info.value) == (
        "t.jsonl:1: draft_id: gives the device, which drafter_id gives too; keep one of them"
    )
