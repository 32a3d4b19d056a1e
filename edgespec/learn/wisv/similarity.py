"""Continuation similarity: WISV's base label for free-text datasets (CNN/DailyMail,
ShareGPT), which have no final answer to compare.

**Windows.** O is the target-only greedy output (decoded to EOS or ``max_new_tokens``).
At a mismatch at output position j the swapped output is O[:j], the draft's token d_j,
then target-only greedy decoding. The two are compared over the window of
:data:`SIMILARITY_WINDOW` = W tokens from j: A = O[j : j+W] and B = swapped[j : j+W].
A window is shorter when its output ends first (EOS, or ``max_new_tokens`` in all). Both
windows start at j, so their first tokens always differ (O[j] ≠ d_j). The swapped output
is decoded only that far: at most W − 1 target tokens after d_j per mismatch.

**Similarity** (:func:`rouge_l_f1`): token-level ROUGE-L F1 over token ids. With L the
length of the longest common subsequence of A and B (:func:`lcs_length`), precision is
L/|B|, recall L/|A|, and F1 = 2L / (|A| + |B|). Two empty windows score 1. The mismatch
is **critical** iff F1 < :data:`SIMILARITY_THRESHOLD` = 0.5.

**Why W = 32.** 32 Gemma tokens are about one to two sentences of English. That is long
enough to tell a local change from a new direction. A swapped token after which the
target goes back to its own text scores (W − 1)/W ≈ 0.97. A one-token insertion or
deletion that then rejoins scores about 0.95. A continuation that goes on to say
something else shares few tokens in order. It is also short enough to bound the cost:
at most 31 continuation tokens per mismatch, the same order as GSM8K's answer-bounded
continuations, instead of up to ``max_new_tokens`` − j. Far beyond a mismatch, two
greedy continuations that differ by one token drift apart whatever that token changed,
so a longer window would mostly measure that drift.

**Why 0.5.** Below 0.5, fewer than half the tokens of the two windows (on average) can
be aligned in order: the swap rewrote most of the next sentence, not a word or two. This
is a stated convention. It is not calibrated against human judgement or a task metric.
Being token-level, it counts a same-meaning paraphrase in other words as critical. Each
mismatch's F1 is stored (the dataset's ``similarity`` array), so another threshold
relabels a captured dataset without decoding again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

SIMILARITY_WINDOW = 32
"""W: tokens compared from the mismatch on (module docstring)."""
SIMILARITY_THRESHOLD = 0.5
"""A mismatch is critical iff its windows' ROUGE-L F1 is below this (module docstring)."""
CRITERION_NAME = "rouge-l-f1"


def lcs_length(a: Sequence[int], b: Sequence[int]) -> int:
    """The length of the longest common subsequence of ``a`` and ``b`` (O(|a|·|b|))."""
    if len(a) < len(b):
        a, b = b, a
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for k, y in enumerate(b):
            current.append(previous[k] + 1 if x == y else max(previous[k + 1], current[k]))
        previous = current
    return previous[-1]


def rouge_l_f1(reference: Sequence[int], candidate: Sequence[int]) -> float:
    """Token-level ROUGE-L F1: 2·LCS / (|reference| + |candidate|); 1 when both are empty."""
    total = len(reference) + len(candidate)
    return 1.0 if total == 0 else 2 * lcs_length(reference, candidate) / total


@dataclass(frozen=True, slots=True)
class ContinuationSimilarity:
    """The free-text base label (module docstring): outputs run to EOS or
    ``max_new_tokens`` (:meth:`finished` is never true), and a mismatch's continuation
    runs at most ``window`` tokens from the mismatch."""

    window: int = SIMILARITY_WINDOW
    threshold: float = SIMILARITY_THRESHOLD

    def __post_init__(self) -> None:
        if self.window < 1:
            raise ValueError(f"window must be >= 1, got {self.window}")
        if not 0 < self.threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], got {self.threshold}")

    def finished(self, output_ids: Sequence[int]) -> bool:
        return False

    def windows(
        self, reference: Sequence[int], swapped: Sequence[int], position: int
    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(A, B): the target-only and the swapped output's tokens from ``position`` on,
        at most ``window`` of each."""
        end = position + self.window
        return tuple(reference[position:end]), tuple(swapped[position:end])

    def similarity(self, reference: Sequence[int], swapped: Sequence[int], position: int) -> float:
        """ROUGE-L F1 of the two windows from ``position``."""
        return rouge_l_f1(*self.windows(reference, swapped, position))

    def critical(self, similarity: float) -> bool:
        return similarity < self.threshold

    def describe(self) -> dict[str, Any]:
        """The criterion and its parameters, for a dataset's metadata."""
        return {
            "name": CRITERION_NAME,
            "window": self.window,
            "threshold": self.threshold,
            "rule": (
                "critical iff the token-id ROUGE-L F1 (2 LCS / (|A| + |B|)) of the target-only "
                "output A and the swapped output B (draft token at the mismatch, then "
                "target-only greedy), each over its first `window` tokens from the mismatch, "
                "is below `threshold`"
            ),
        }
