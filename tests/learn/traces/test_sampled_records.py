"""A sampled capture's records (``temperature``, ``acceptance_prob``): written only when
sampled, read back, refused naming the line and field when malformed, and read by the
simulator beside any other trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgespec.config import ConfigError
from edgespec.learn.traces.records import read_trace, record_to_json, write_trace
from edgespec.learn.traces.summary import summarize_traces
from edgespec.sim.setup.workload import load_trace
from tests.learn.traces.test_records import _record

NOT_PROBABILITIES = "must be a list of numbers in [0, 1]"
ALPHAS = (0.91234, 0.5, 0.25, 1.0, 0.0, 0.75)


def test_a_sampled_record_round_trips_and_a_greedy_one_writes_neither_field(
    tmp_path: Path,
) -> None:
    sampled = _record(temperature=0.8, acceptance_prob=ALPHAS, top_k=40)
    path = tmp_path / "t.jsonl"
    write_trace(path, [sampled, _record(request_id="g")])
    first, second = (json.loads(line) for line in path.read_text().splitlines())
    assert first["temperature"] == 0.8 and first["acceptance_prob"][0] == 0.9123
    assert first["top_k"] == 40 and "top_p" not in first and "min_p" not in first  # no cut
    assert not {"temperature", "acceptance_prob", "top_k"} & set(second)
    again, greedy = read_trace(path)
    assert again.acceptance_prob == (0.9123, *ALPHAS[1:]) and greedy == _record(request_id="g")
    assert (again.top_k, again.top_p, again.min_p) == (40, 1.0, 0.0)
    (entry, _) = load_trace(path)  # the simulator replays its acceptance_seq
    assert entry.acceptance_seq == sampled.acceptance_seq
    assert summarize_traces("x", [sampled], 4).expected_acceptance == pytest.approx(sum(ALPHAS) / 6)
    assert summarize_traces("x", [greedy], 4).expected_acceptance is None


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"acceptance_prob": [0.5, 1.5, 0, 0, 0, 0]}, "acceptance_prob", NOT_PROBABILITIES),
        ({"acceptance_prob": [True] * 6}, "acceptance_prob", NOT_PROBABILITIES),
        ({"acceptance_prob": [0.5] * 5}, "", "gsm8k-3: acceptance_prob has 5 entries for 6 "
         "output tokens"),
        ({"temperature": -0.5}, "temperature", "expected a number >= 0, got -0.5"),
        ({"temperature": 0}, "", "gsm8k-3: acceptance_prob comes with a temperature > 0 and "
         "a chain draft (no draft_tree), and only then"),
        ({"draft_tree": "2,1"}, "", "gsm8k-3: acceptance_prob comes with a temperature > 0 "
         "and a chain draft (no draft_tree), and only then"),
        ({"top_k": -1}, "top_k", "must be a whole number in [0, 2**32) (0: every token), got -1"),
        ({"top_p": "0.9"}, "top_p", "expected a number, got '0.9'"),
        ({"min_p": 1.5}, "min_p", "must be in [0, 1] (0: no cut), got 1.5"),
    ],
)  # fmt: skip
def test_a_bad_sampled_field_names_its_line_and_field(
    tmp_path: Path, change: dict[str, object], field: str, message: str
) -> None:
    obj = record_to_json(_record(temperature=0.8, acceptance_prob=ALPHAS))
    obj.update(change)
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(obj) + "\n")
    with pytest.raises(ConfigError) as info:
        read_trace(path)
    where = f"{path}:1" + (f": {field}" if field else "")
    assert str(info.value) == f"{where}: {message}"


def test_a_sampled_tree_record_keeps_its_sampling_and_no_alpha(tmp_path: Path) -> None:
    """A sampled token tree's record: temperature and cuts, rounds, no acceptance_prob or
    draft_row_entries (its nodes are proposed for certain); either of them is refused."""
    tree = _record(temperature=0.8, top_k=40, draft_tree="2,1")
    path = tmp_path / "t.jsonl"
    write_trace(path, [tree])
    line = json.loads(path.read_text())
    assert (line["temperature"], line["top_k"], line["draft_tree"]) == (0.8, 40, "2,1")
    assert "acceptance_prob" not in line and "draft_row_entries" not in line
    assert read_trace(path) == [tree]
    (entry,) = load_trace(path)
    assert (entry.temperature, entry.cuts.top_k, entry.acceptance_prob) == (0.8, 40, None)
    assert summarize_traces("x", [tree], 4).expected_acceptance is None
    with pytest.raises(ValueError, match="draft_row_entries come with a temperature > 0 and a "
                       "chain draft, one per output token"):  # fmt: skip
        _record(temperature=0.8, draft_tree="2,1", draft_row_entries=(1,) * 6)
