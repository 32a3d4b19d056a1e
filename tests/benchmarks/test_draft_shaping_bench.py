"""benchmarks/draft_shaping.py's measure at one position, on hand-built rows (no model): a
greedy setting scores whether each draft argmax is the target's penalized one; a sampled
setting scores the sum over tokens of min(p, q), p the target's cut distribution."""

from __future__ import annotations

import numpy as np

from edgespec.runtime.backends.draft_shaping import DraftShaping, TokenColumns
from tests.benchmarks.scripts import load_script

BENCH = load_script("draft_shaping.py", "draft_shaping_bench")


def _rows(draft: list[float]) -> tuple[int, list[int], np.ndarray, np.ndarray]:
    """Prompt (0, 1), then 2 and 3; after 2 (position 2) the target favours 2 again, the
    repeat a penalty turns it from, to 3; ``draft``: the draft's row there."""
    target = np.zeros((3, 4), dtype=np.float32)
    target[2] = [0.0, 0.0, 3.0, 2.5]
    drafts = np.zeros((3, len(draft)), dtype=np.float32)
    drafts[2] = draft
    return 2, [0, 1, 2, 3], target, drafts


def test_greedy_counts_the_argmax_the_target_keeps() -> None:
    rows = _rows([0.0, 0.0, 2.0, 1.5])  # the draft favours 2 too, by less
    penalty = DraftShaping(2, repetition_penalty=2.0)  # target: 3 / 2 < 2.5; draft: 1 < 1.5
    assert BENCH._position(penalty, 0.0, rows, 2, None) == (0.0, 1.0)
    assert BENCH._position(DraftShaping(2), 0.0, rows, 2, None) == (1.0, 1.0)


def test_sampling_scores_the_overlap_of_p_and_q() -> None:
    rows = _rows([0.0, 0.0, 0.1, 0.1])  # a nearly flat draft
    plain, shaped = BENCH._position(DraftShaping(2, top_k=2), 1.0, rows, 2, None)
    p = np.exp([3.0, 2.5]) / np.exp([3.0, 2.5]).sum()  # the target's top-2: tokens 2, 3
    q = np.exp(0.1) / (2 + 2 * np.exp(0.1))  # the uncut draft's for each of 2, 3
    assert abs(plain - (min(p[0], q) + min(p[1], q))) < 1e-6
    assert abs(shaped - (min(p[0], 0.5) + min(p[1], 0.5))) < 1e-6  # q cut to 2, 3 alike


def test_a_trimmed_drafts_columns_are_its_target_ids() -> None:
    """The draft has columns for target tokens 3 and 2 only (in that order)."""
    rows = _rows([1.0, 2.0])  # column 0: token 3's logit, column 1: token 2's
    columns = TokenColumns.of(np.array([3, 2]))
    penalty = DraftShaping(2, repetition_penalty=4.0)  # the draft's 2: 2 / 4 < 1
    assert BENCH._position(penalty, 0.0, rows, 2, columns) == (0.0, 1.0)
