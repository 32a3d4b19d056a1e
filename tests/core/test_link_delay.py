"""The link model's formulas, with exact byte counts and delays (no simulator involved)."""

from __future__ import annotations

import math

import pytest

from edgespec.core.link_delay import (
    DraftRows,
    downlink_bytes,
    draft_probs_row_bytes,
    one_way_delay_s,
    uplink_bytes,
    varint_bytes,
)

COMPACT = DraftRows("compact")


class Draws:
    """A ``uniform`` callable that hands out ``values`` in order and counts its calls."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)
        self.calls = 0

    def __call__(self) -> float:
        self.calls += 1
        return self.values.pop(0)


def test_no_jitter_draws_nothing() -> None:
    draws = Draws()
    assert one_way_delay_s(0.02, 100, 1000.0, 0.0, draws) == pytest.approx(0.11)
    assert draws.calls == 0
    assert one_way_delay_s(0.02, 100, math.inf, 0.0, draws) == 0.01


def test_jitter_is_one_exponential_draw() -> None:
    draws = Draws(0.75)
    delay = one_way_delay_s(0.02, 100, 1000.0, 0.004, draws)
    assert delay == pytest.approx(0.01 + 0.1 + 0.004 * math.log(4.0))
    assert draws.calls == 1


def test_uplink_counts_every_part() -> None:
    # header + 4 * (3 drafts + 2 prompt ids) + 4 * 3 parents + 2 * 3 * 10 probs + 2 * 4 hidden
    assert (
        uplink_bytes(3, 2, 10, DraftRows("dense"), num_hidden=4, tree=True) == 64 + 20 + 12 + 60 + 8
    )
    assert uplink_bytes(3, 0, 10, None, num_hidden=7) == 64 + 12 + 14
    # compact: 3 rows of (a 1-byte count, 10 entries of a 1-byte id varint + a float32)
    assert uplink_bytes(3, 0, 10, DraftRows("compact")) == 64 + 12 + 3 * (1 + 10 * 5)


def test_a_compact_row_is_at_most_its_kept_entries_as_varint_ids_and_float32s() -> None:
    assert [varint_bytes(v) for v in (0, 1, 127, 128, 16_383, 16_384, 262_143)] == [
        1, 1, 1, 2, 2, 3, 3
    ]  # fmt: skip
    # Gemma 3's 262,144 tokens: at most 1,024 entries (a 2-byte count), ids below 2**18
    assert draft_probs_row_bytes(262_144, COMPACT) == 2 + 1024 * (3 + 4)
    assert draft_probs_row_bytes(262_144, DraftRows("dense")) == 2 * 262_144  # 73x the compact row
    assert draft_probs_row_bytes(262_144, None) == 0
    assert draft_probs_row_bytes(300, COMPACT) == 2 + 300 * (2 + 4)  # every token kept


def test_a_top_k_cut_bounds_a_compact_rows_entries_and_leaves_a_dense_row_whole() -> None:
    gemma = 262_144
    assert draft_probs_row_bytes(gemma, DraftRows("compact", top_k=40)) == 1 + 40 * (3 + 4)
    assert DraftRows("compact", top_k=5000).row_entries(gemma) == 1024  # the cap still holds
    assert DraftRows("compact", top_k=40).row_entries(30) == 30  # and the vocabulary
    assert DraftRows("compact", top_k=0).row_entries(gemma) == 1024  # 0: uncut
    dense = draft_probs_row_bytes(gemma, DraftRows("dense", top_k=40))
    assert dense == draft_probs_row_bytes(gemma, DraftRows("dense")) == 2 * gemma
    assert uplink_bytes(2, 0, gemma, DraftRows("compact", top_k=3)) == 64 + 8 + 2 * (1 + 3 * 7)


def test_measured_entries_are_charged_rounded_within_the_cut_and_the_cap() -> None:
    """A capture's mean kept entries (a top-p draft keeps few of Gemma's 262,144 tokens)."""
    gemma = 262_144
    assert DraftRows("compact", mean_entries=2.4).row_entries(gemma) == 2
    assert DraftRows("compact", mean_entries=2.6).row_entries(gemma) == 3
    assert DraftRows("compact", mean_entries=0.2).row_entries(gemma) == 1  # a row keeps one
    assert DraftRows("compact", top_k=4, mean_entries=9.0).row_entries(gemma) == 4
    assert DraftRows("compact", mean_entries=5000.0).row_entries(gemma) == 1024
    assert draft_probs_row_bytes(gemma, DraftRows("compact", mean_entries=3.0)) == 1 + 3 * 7
    dense = DraftRows("dense", mean_entries=3.0)  # a dense row is every token's, measured or not
    assert draft_probs_row_bytes(gemma, dense) == 2 * gemma


def test_downlink_counts_hidden_values() -> None:
    assert downlink_bytes(2) == 64 + 12
    assert downlink_bytes(2, num_hidden=5) == 64 + 12 + 10
