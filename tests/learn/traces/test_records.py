"""Trace JSONL schema: round trip, replay, summaries, and errors that name the field."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgespec.config import ConfigError
from edgespec.learn.traces.records import (
    ROUND_SHAPE,
    TraceRecord,
    TraceRound,
    read_trace,
    record_to_json,
    write_trace,
)
from edgespec.learn.traces.replay import replay_accepted_lengths
from edgespec.learn.traces.summary import summarize_by_dataset, summarize_traces
from edgespec.sim.setup.workload import load_trace


def _record(**overrides: object) -> TraceRecord:
    fields: dict[str, object] = {
        "request_id": "gsm8k-3",
        "arrival_ms": 12.5,
        "prompt_tokens": 40,
        "output_tokens": 6,
        "drafter_id": 2,
        "slo_class": "gold",
        "dataset": "gsm8k",
        "draft_model": "d",
        "target_model": "t",
        "gamma_max": 4,
        "acceptance_seq": (1, 1, 0, 1, 1, 1),
        "rounds": (TraceRound(4, 2, 3.25, 100.5), TraceRound(3, 2, 2.0, 90.0)),
        "draft_features": tuple((0.5, 1.25, 0.1, 2.0, 0.9) for _ in range(6)),
        "sd_ms": 300.0,
        "target_only_ms": 600.0,
        "assisted_ms": 400.0,
        "lossless": True,
    }
    fields.update(overrides)
    return TraceRecord(**fields)  # type: ignore[arg-type]


def test_round_trip(tmp_path: Path) -> None:
    records = [_record(), _record(request_id="x", draft_features=None, assisted_ms=None)]
    path = tmp_path / "t.jsonl"
    assert write_trace(path, records) == 2
    assert read_trace(path) == records
    first = json.loads(path.read_text().splitlines()[0])
    assert list(first)[:6] == [
        "request_id", "arrival_ms", "prompt_tokens", "output_tokens", "drafter_id", "slo_class"
    ]  # fmt: skip
    assert first["rounds"] == [[4, 2, 3.25, 100.5], [3, 2, 2.0, 90.0]]
    assert "assisted_ms" not in json.loads(path.read_text().splitlines()[1])


def test_the_simulator_reads_the_trace(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_trace(path, [_record()])
    (entry,) = load_trace(path)
    assert entry.acceptance_seq == (1, 1, 0, 1, 1, 1)
    assert entry.num_output_tokens == 6 and entry.client_id == "2" and entry.arrival_s == 0.0125


def test_replay_accepted_lengths() -> None:
    # γ=4: round at 0 accepts 1,1 then rejects (commits 3); round at 3 accepts the last three
    assert replay_accepted_lengths((1, 1, 0, 1, 1, 1), 4) == [2, 3]
    assert replay_accepted_lengths((1, 1, 0, 1, 1, 1), 1) == [1, 0, 1, 1]
    assert replay_accepted_lengths((0, 0, 0), 4) == [0, 0, 0]
    assert replay_accepted_lengths((1,) * 10, 4) == [4, 4]
    # a token budget: the runtime never drafts past it (window ≤ remaining − 1), so the
    # last token is a target step with nothing drafted, whatever its acceptance flag says
    assert replay_accepted_lengths((1,) * 8, 4) == [4, 3]
    assert replay_accepted_lengths((1,) * 8, 4, 8) == [4, 2]
    assert replay_accepted_lengths((1, 1, 1, 1, 0, 1), 4, 6) == [4, 0]
    assert replay_accepted_lengths((1, 1, 1, 0, 1), 4, 5) == [3, 0]
    with pytest.raises(ValueError, match="gamma must be >= 1"):
        replay_accepted_lengths((1,), 0)


def test_summary_numbers() -> None:
    s = summarize_traces("gsm8k", [_record()], 4)
    assert s.num_rounds == 2
    assert s.measured_aal == 2.0
    assert s.replayed_aal == 2.5
    assert s.position_acceptance == 5 / 6
    assert s.sd_tokens_per_s == 20.0
    assert s.speedup_vs_target == 2.0
    assert s.speedup_vs_assisted == pytest.approx(4 / 3)
    assert s.mean_draft_ms_per_token == pytest.approx(5.25 / 7)
    assert s.all_lossless is True
    names = [x.name for x in summarize_by_dataset([_record(), _record(dataset="cnndm")], 4)]
    assert names == ["gsm8k", "cnndm", "all"]


def test_length_mismatch_is_rejected() -> None:
    with pytest.raises(ValueError, match="acceptance_seq has 2 entries for 6 output tokens"):
        _record(acceptance_seq=(1, 0))


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"acceptance_seq": [1, 2, 0, 1, 1, 1]}, ".acceptance_seq"),
        ({"drafter_id": "two"}, ".drafter_id"),
        ({"rounds": [[4, 2]]}, ".rounds[0]"),
        ({"rounds": [[4, 2, 1.0, 2.0], [3, 2.7, 1.0, 2.0]]}, ".rounds[1]"),  # not whole
        ({"rounds": [[4, 5, 1.0, 2.0]]}, ".rounds[0]"),  # more accepted than sent
        ({"rounds": [[4, 2, 1.0, -2.0]]}, ".rounds[0]"),
        ({"rounds": [[4, 2, 1.0, 2.0, -1]]}, ".rounds[0]"),
        ({"rounds": [[4, True, 1.0, 2.0]]}, ".rounds[0]"),
        ({"rounds": [[4, 2, "1", 2.0]]}, ".rounds[0]"),
        ({"rounds": {"0": [4, 2, 1.0, 2.0]}}, ".rounds"),
        ({"output_tokens": 5}, ""),
    ],
)
def test_bad_lines_name_the_field(tmp_path: Path, change: dict[str, object], field: str) -> None:
    """``field``: what follows the line's ``PATH:1`` in the error's path."""
    obj = record_to_json(_record())
    obj.update(change)
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(obj) + "\n")
    with pytest.raises(ConfigError) as info:
        read_trace(path)
    assert info.value.path == f"{path}:1{field}"
    name = field.removeprefix(".")
    assert str(info.value).startswith(f"{path}:1: {name}: " if name else f"{path}:1: ")
    assert "config field" not in str(info.value)
    if name.startswith("rounds"):
        assert str(info.value).endswith(ROUND_SHAPE)


def test_a_field_of_the_wrong_type_names_the_type(tmp_path: Path) -> None:
    obj = record_to_json(_record())
    obj["drafter_id"] = "two"
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(obj) + "\n")
    with pytest.raises(ConfigError) as info:
        read_trace(path)
    assert str(info.value) == f"{path}:1: drafter_id: expected int, got 'two'"


def test_summary_speeds_need_every_time_and_lossless_ignores_unknowns() -> None:
    both = [_record(), _record(request_id="b", assisted_ms=None, lossless=None)]
    s = summarize_traces("gsm8k", both, 4)
    assert s.sd_tokens_per_s == 20.0 and s.assisted_tokens_per_s is None
    assert s.speedup_vs_assisted is None and s.all_lossless is True
    assert summarize_traces("x", [_record(), _record(lossless=False)], 4).all_lossless is False
    assert summarize_traces("x", [_record(lossless=None)], 4).all_lossless is None
    assert summarize_traces("x", [_record(sd_ms=0.0)], 4).sd_tokens_per_s is None
    empty = _record(output_tokens=0, acceptance_seq=(), draft_features=None, rounds=())
    nothing = summarize_traces("x", [empty], 4)
    assert nothing.target_tokens_per_s == 0.0 and nothing.speedup_vs_target is None
    assert nothing.mean_draft_ms_per_token is None and nothing.replayed_aal == 0.0


def test_summary_replay_caps_windows_at_the_token_budget() -> None:
    # (1, 1, 0, 1, 1, 1) at γ=4: rounds of 2 and 3 accepted; with a budget of 6 tokens the
    # second round (at 3) drafts at most 6 − 3 − 1 = 2
    assert summarize_traces("x", [_record()], 4).replayed_aal == 2.5
    assert summarize_traces("x", [_record()], 4, max_new_tokens=6).replayed_aal == 2.0


def test_one_dataset_gets_no_all_row() -> None:
    assert [s.name for s in summarize_by_dataset([_record(), _record()], 4)] == ["gsm8k"]


def test_measured_mean_accepted_and_a_false_lossless_flag_round_trip(tmp_path: Path) -> None:
    assert (
        _record().measured_mean_accepted == 2.0
        and _record(rounds=()).measured_mean_accepted is None
    )
    path = tmp_path / "t.jsonl"
    write_trace(path, [_record(lossless=False)])
    assert json.loads(path.read_text())["lossless"] is False
    assert read_trace(path)[0].lossless is False


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"drafter_id": True}, "drafter_id", "expected int, got true"),
        ({"acceptance_seq": [1, 1, 0.0, 1, 1, 1]}, "acceptance_seq", "must be a list of 0/1"),
        ({"acceptance_seq": [1, True, 0, 1, 1, 1]}, "acceptance_seq", "must be a list of 0/1"),
    ],
)
def test_booleans_and_floats_are_not_integers(
    tmp_path: Path, change: dict[str, object], field: str, message: str
) -> None:
    obj = record_to_json(_record())
    obj.update(change)
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(obj) + "\n")
    with pytest.raises(ConfigError, match=f"^{re.escape(str(path))}:1: {field}: {message}"):
        read_trace(path)


def test_draft_features_need_one_row_per_output_token() -> None:
    with pytest.raises(ValueError, match="gsm8k-3: draft_features must have one row per output"):
        _record(draft_features=((0.5, 1.25, 0.1, 2.0, 0.9),))


def test_a_trace_write_stopped_part_way_leaves_the_earlier_file(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    assert write_trace(path, [_record()]) == 1
    before = path.read_text()

    def records() -> Iterator[TraceRecord]:
        yield _record(request_id="r1")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_trace(path, records())
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["t.jsonl"]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("draft_features", "NaN", "row 4: margin is nan"),
        ("draft_features", "-Infinity", "row 4: margin is -inf"),
        ("rejection_features", "Infinity", "position 2: row 4: margin is inf"),
    ],
)
def test_a_non_finite_feature_names_line_field_and_request_in_both_readers(
    tmp_path: Path, field: str, value: str, message: str
) -> None:
    """JSON's NaN / Infinity were read as features: a NaN trained nothing (``mean[0] is
    nan``) or scored NaN in silence, in the trainer and in the simulator's replay."""
    rows = [[0.5, 1.25, 0.1, 2.0, 0.9] for _ in range(6)]
    rows[4][2] = 12345.5  # stands for the value, which json.dumps would write as is
    obj = record_to_json(_record())
    obj[field] = [[2, rows[:5]]] if field == "rejection_features" else rows
    path = tmp_path / "t.jsonl"
    good = json.dumps(record_to_json(_record(request_id="ok")))
    path.write_text(good + "\n" + json.dumps(obj).replace("12345.5", value) + "\n")
    with pytest.raises(ConfigError) as info:
        read_trace(path)
    assert str(info.value) == (
        f"{path}:2: {field}: {message}, expected a finite number (request gsm8k-3)"
    )
    assert info.value.path == f"{path}:2.{field}"
    with pytest.raises(ConfigError) as info:
        load_trace(path)  # the simulator's reader (workload and acceptance.traces)
    assert str(info.value) == (
        f"{path}:2: {field}: {message}, expected a finite number (request gsm8k-3)"
    )


NAN, INF = float("nan"), float("inf")
_ROWS = tuple((0.5, 1.25, 0.1, 2.0, 0.9) for _ in range(6))


@pytest.mark.parametrize(
    ("change", "field", "shown"),
    [
        ({"draft_features": (*_ROWS[:4], (0.5, 1.25, NAN, 2.0, 0.9), _ROWS[5])},
         "draft_features[4][2]", "nan"),
        ({"rejection_features": ((2, (*_ROWS[:4], (0.5, 1.25, -INF, 2.0, 0.9))),)},
         "rejection_features[0][1][4][2]", "-inf"),
        ({"rounds": (TraceRound(4, 2, 3.25, 100.5), TraceRound(3, 2, 2.0, INF))},
         "rounds[1][3]", "inf"),
        ({"arrival_ms": NAN}, "arrival_ms", "nan"),
        ({"assisted_ms": INF}, "assisted_ms", "inf"),
    ],
)  # fmt: skip
def test_a_non_finite_value_is_refused_before_anything_is_written(
    tmp_path: Path, change: dict[str, object], field: str, shown: str
) -> None:
    """It was written as JSON's bare NaN / Infinity, a trace read_trace then refused."""
    records = [_record(request_id="ok"), _record(**change)]
    path = tmp_path / "new" / "t.jsonl"
    with pytest.raises(ConfigError) as info:
        write_trace(path, records)
    assert str(info.value) == (
        f"{path}: {field}: {shown}, expected a finite number (request gsm8k-3); the trace is "
        "not written"
    )
    assert list(tmp_path.iterdir()) == []  # not even the folder
    (tmp_path / "new").mkdir()
    path.write_text("before\n")
    with pytest.raises(ConfigError):
        write_trace(path, records)
    assert path.read_text() == "before\n"
    assert [p.name for p in (tmp_path / "new").iterdir()] == ["t.jsonl"]
