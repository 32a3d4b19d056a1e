"""One rule for a trace's ``acceptance_seq``, in the simulator's loader and in
:func:`edgespec.learn.traces.records.read_trace` (:func:`.trace_fields.acceptance_values`):
a non-empty list of 0/1 integers. Before, the simulator took ``[]``, and the run died
mid-way with a traceback (``ValueError: trace acceptance needs a non-empty
acceptance_seq``, exit 1), and took JSON ``true``/``false``, which the trace reader
refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgespec.config import ConfigError
from edgespec.learn.traces.records import read_trace
from edgespec.sim.setup.workload import load_trace
from tests.sim.helpers import sim_refusal

EMPTY = "acceptance_seq: is empty; a trace holds one 0/1 per output position"
NOT_01 = "acceptance_seq: must be a list of 0/1 integers"
LINE = {
    "request_id": "r1", "arrival_ms": 1.0, "prompt_tokens": 4, "output_tokens": 4,
    "drafter_id": 0, "slo_class": "default", "acceptance_seq": [1, 0, 1, 1],
}  # fmt: skip
"""A trace line as edgespec trace writes it (its fields the reader requires)."""


def _trace(path: Path, seq: object) -> Path:
    """A two-request trace whose second line's ``acceptance_seq`` is ``seq``."""
    lines = [{**LINE, "request_id": "r0"}, {**LINE, "acceptance_seq": seq}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_an_empty_acceptance_seq_is_refused_at_its_line_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _trace(tmp_path / "t.jsonl", [])
    argv = [f"workload={{kind: trace, trace: {path}}}", "slo_classes.default=null"]
    assert sim_refusal(argv, tmp_path, capsys) == (
        f"edgespec sim: config field 'workload.trace': {path}:2: {EMPTY}\n"
    )
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("seq", "message"), [([], EMPTY), ([True, False], NOT_01), ([1, 2], NOT_01), ([1.0], NOT_01)]
)
def test_both_readers_refuse_the_same_acceptance_seq(
    tmp_path: Path, seq: object, message: str
) -> None:
    path = _trace(tmp_path / "t.jsonl", seq)
    for read in (load_trace, read_trace):
        with pytest.raises(ConfigError) as info:
            read(path)
        assert str(info.value) == f"{path}:2: {message}"
