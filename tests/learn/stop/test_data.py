"""The rejection predictor's dataset: rows from hand-built acceptance sequences."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from edgespec.learn.stop.data import build_dataset, split_by_request, window_rows
from edgespec.learn.traces.records import TraceRecord


def record(request_id: str, seq: tuple[int, ...], draft: str = "gemma3-270m-draft") -> TraceRecord:
    return TraceRecord(
        request_id=request_id,
        arrival_ms=0.0,
        prompt_tokens=5,
        output_tokens=len(seq),
        drafter_id=0,
        slo_class="default",
        dataset="gsm8k",
        draft_model=draft,
        target_model="gemma3-270m",
        gamma_max=4,
        acceptance_seq=seq,
        draft_features=tuple((float(j), 0.1 * j, 0.0, 1.0, 0.5) for j in range(len(seq))),
    )


def test_first_rejection_kept_and_later_positions_dropped() -> None:
    #        position: 0  1  2  3  4  5  6  7  8  9
    seq = (1, 1, 0, 0, 1, 1, 1, 1, 1, 0)
    # round 1 at 0: γ=4, accepts 0,1, first rejection 2 (kept, label 0); position 3 is
    # after the first rejection: it is the target's correction token, never drafted.
    # round 2 at 3: γ=4: position 3 rejected at once.
    # round 3 at 4: γ=4: 4..7 accepted (full block), 8 is the bonus token.
    # round 4 at 9: γ=min(4, 10-9-1)=0: the last token is a plain target step.
    assert window_rows(seq, 4) == [(0, 1), (1, 1), (2, 0), (3, 0), (4, 1), (5, 1), (6, 1), (7, 1)]


def test_window_caps_each_round() -> None:
    seq = (1, 1, 1, 1, 1, 0, 1)
    assert window_rows(seq, 2) == [(0, 1), (1, 1), (3, 1), (4, 1)]
    # a rejection right after a full block is never drafted (it is the bonus position)
    assert (5, 0) not in window_rows(seq, 2)
    with pytest.raises(ValueError, match="k_max"):
        window_rows(seq, 0)


def test_dataset_rows_carry_their_position_features_and_request() -> None:
    data = build_dataset([record("a", (1, 0, 1)), record("b", (0, 1, 1, 1))], k_max=4)
    assert data.labels.tolist() == [1, 0, 0, 1, 1]
    assert data.groups.tolist() == [0, 0, 1, 1, 1]
    # feature column 0 is the position in these records
    assert data.features[:, 0].tolist() == [0.0, 1.0, 0.0, 1.0, 2.0]
    assert data.balance() == {
        "samples": 5,
        "accepted": 3,
        "rejected": 2,
        "accepted_share": 0.6,
        "rejected_share": 0.4,
        "requests": 2,
        "feature_dimension": 5,
    }


def test_lookup_traces_are_refused() -> None:
    with pytest.raises(ValueError, match="lookup tokens"):
        build_dataset([record("a", (1, 0, 1), draft="gemma3-270m-draft+lookup")], 4)


def test_split_keeps_requests_whole() -> None:
    records = [record(f"r{i}", (1, 1, 0, 1, 0, 1, 1)) for i in range(20)]
    data = build_dataset(records, 4)
    train, val, test = split_by_request(data, (0.7, 0.15, 0.15), seed=3)
    groups = [set(part.groups.tolist()) for part in (train, val, test)]
    assert len(groups[0]) == 14 and len(groups[1]) == 3 and len(groups[2]) == 3
    assert not (groups[0] & groups[1]) and not (groups[0] & groups[2])
    assert not (groups[1] & groups[2])
    assert len(train) + len(val) + len(test) == len(data)
    again = split_by_request(data, (0.7, 0.15, 0.15), seed=3)
    assert np.array_equal(again[2].groups, test.groups)


def test_rejection_features_round_trip_and_errors() -> None:
    from edgespec.config import ConfigError
    from edgespec.learn.traces.records import record_from_json, record_to_json
    from edgespec.sim.setup.workload import parse_trace_record

    base = record("r", (1, 0, 1))
    after = ((1, ((0.5, 1.0, 0.25, 2.0, 0.75),)),)
    rec = dataclasses.replace(base, rejection_features=after)
    data = record_to_json(rec)
    assert data["rejection_features"] == [[1, [[0.5, 1.0, 0.25, 2.0, 0.75]]]]
    assert record_from_json(data, "line 1").rejection_features == after
    entry = parse_trace_record(data, "line 1")
    assert entry.rejection_features == {1: ((0.5, 1.0, 0.25, 2.0, 0.75),)}
    data["rejection_features"] = [[1, [[0.5, 1.0]]]]
    with pytest.raises(ConfigError, match=r"^line 1: rejection_features: "):
        parse_trace_record(data, "line 1")
    with pytest.raises(ConfigError, match="rows of 5 numbers"):
        record_from_json(data, "line 1")


def test_shipped_training_traces_give_the_documented_dataset() -> None:
    from edgespec.policies.stop_drafting import load_stop_policy
    from edgespec.reproduce.wisp.predictor import load_training_records

    records = load_training_records()
    assert len(records) == 200 and {r.dataset for r in records} == {
        "gsm8k", "cnndm", "humaneval", "sharegpt"
    }  # fmt: skip
    data = build_dataset(records, k_max=4)
    assert data.balance()["samples"] == 10_885 and data.balance()["accepted"] == 8_421
    bundled = load_stop_policy()
    assert bundled.metadata["dataset"]["samples"] == 10_885
    assert 0.5 < bundled.threshold < 1.0
    keep = bundled.keep_mask(data.features)
    # the shipped operating point keeps most accepted and few first-rejected positions
    assert keep[data.labels == 1].mean() > 0.6 and keep[data.labels == 0].mean() < 0.2


def test_ngram_and_featureless_traces_are_refused() -> None:
    with pytest.raises(ValueError, match="trace request a: draft 'ngram' drafts lookup tokens"):
        build_dataset([record("a", (1, 0, 1), draft="ngram")], 4)
    bare = dataclasses.replace(record("b", (1, 0, 1)), draft_features=None)
    with pytest.raises(ValueError, match="^trace request b: no draft_features recorded$"):
        build_dataset([bare], 4)


@pytest.mark.parametrize(
    ("fractions", "message"),
    [
        ((0.5, 0.5, 0.0), "split fractions must be positive and sum to 1"),
        ((0.6, 0.5, -0.1), "split fractions must be positive and sum to 1"),
        ((0.5, 0.3, 0.3), "split fractions must be positive and sum to 1"),
    ],
)
def test_split_refuses_bad_fractions(fractions: tuple[float, float, float], message: str) -> None:
    data = build_dataset([record(f"r{i}", (1, 0, 1)) for i in range(6)], 4)
    with pytest.raises(ValueError, match=message):
        split_by_request(data, fractions, seed=0)


@pytest.mark.parametrize("fractions", [(0.9, 0.05, 0.05), (0.8, 0.1, 0.1), (0.1, 0.1, 0.8)])
def test_split_of_three_requests_gives_one_to_each_part(
    fractions: tuple[float, float, float],
) -> None:
    data = build_dataset([record(f"r{i}", (1, 0, 1)) for i in range(3)], 4)
    parts = split_by_request(data, fractions, seed=0)
    assert [len(set(p.groups.tolist())) for p in parts] == [1, 1, 1]
    with pytest.raises(
        ValueError, match="need at least 3 requests with drafted positions to split, got 2"
    ):
        split_by_request(data.subset(data.groups < 2), fractions, seed=0)


def test_split_shuffles_requests_by_seed_and_subsets_count_their_own_requests() -> None:
    data = build_dataset([record(f"r{i}", (1, 1, 0, 1)) for i in range(20)], 4)
    tests = {tuple(split_by_request(data, (0.7, 0.15, 0.15), seed)[2].groups) for seed in range(4)}
    assert len(tests) > 1  # not the same requests whatever the seed
    train = split_by_request(data, (0.7, 0.15, 0.15), seed=0)[0]
    assert train.balance()["requests"] == 14 and len(train.request_ids) == 20
