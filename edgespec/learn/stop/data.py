"""The rejection predictor's dataset (WISP §4.1, App. B Table 8), built from real-pair traces.

One row per position the *draft model* drafts when the trace's request is replayed in
rounds of window ``k_max`` (greedy; :func:`window_rows`): the draft-logit features of that
position (:data:`~edgespec.policies.stop_drafting.STOP_FEATURE_NAMES`, as the trace stores
them) and its label, 1 accepted or 0 the round's **first** rejection. Positions after the
first rejection of a round are not rows: they are never drafted on the target's prefix
(the round ends there and the next one starts after the target's correction token).

Lookup tokens: a trace drafted with prompt lookup (``draft_model`` ending ``+lookup``) or
by the n-gram drafter is refused. There a position's flag may belong to a lookup token,
which has no draft distribution, while its features describe the neural draft's. Capture
the dataset with the neural draft alone (docs/LEARN.md gives the command).

Splits are by request, never by row, so that no request's positions are on both sides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from edgespec.learn.traces.records import TraceRecord
from edgespec.policies.stop_drafting import STOP_FEATURE_NAMES


def window_rows(acceptance_seq: Sequence[int], k_max: int) -> list[tuple[int, int]]:
    """``(position, label)`` rows of one request replayed greedily at window ``k_max``.

    A round starting with ``s`` tokens committed drafts γ = min(k_max, n − s − 1)
    positions (the last output token is a plain target step, as in both hosts), keeps its
    run of accepted positions (label 1) and its first rejected one (label 0), and commits
    the accepted tokens plus the target's own: the next round starts at s + L + 1.
    """
    if k_max < 1:
        raise ValueError(f"k_max must be >= 1, got {k_max}")
    n = len(acceptance_seq)
    rows: list[tuple[int, int]] = []
    start = 0
    while start < n:
        gamma = min(k_max, n - start - 1)
        accepted = 0
        while accepted < gamma and acceptance_seq[start + accepted]:
            rows.append((start + accepted, 1))
            accepted += 1
        if accepted < gamma:
            rows.append((start + accepted, 0))
        start += accepted + 1
    return rows


@dataclass(frozen=True, slots=True, eq=False)
class StopDataset:
    """Rows of features (n × 5), labels (1 accepted / 0 first rejection) and the index of
    the request each row comes from (``groups``, for splitting by request)."""

    features: npt.NDArray[np.float64]
    labels: npt.NDArray[np.int64]
    groups: npt.NDArray[np.int64]
    request_ids: tuple[str, ...]

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def subset(self, mask: npt.NDArray[np.bool_]) -> StopDataset:
        return StopDataset(
            self.features[mask], self.labels[mask], self.groups[mask], self.request_ids
        )

    def balance(self) -> dict[str, float | int]:
        """Table 8's numbers: rows, accepted, rejected and their shares."""
        total = len(self)
        positive = int(self.labels.sum())
        return {
            "samples": total,
            "accepted": positive,
            "rejected": total - positive,
            "accepted_share": positive / total if total else 0.0,
            "rejected_share": (total - positive) / total if total else 0.0,
            "requests": len(set(self.groups.tolist())),
            "feature_dimension": int(self.features.shape[1]),
        }


def check_record(record: TraceRecord) -> None:
    """A ``ValueError`` naming the request when ``record`` cannot give rows: drafted with
    lookup tokens, or without one row of ``draft_features`` per position."""
    draft = record.draft_model
    if draft.endswith("+lookup") or draft == "ngram":
        raise ValueError(
            f"trace request {record.request_id}: draft {draft!r} drafts lookup tokens, which "
            "have no draft distribution; capture the dataset with the neural draft alone"
        )
    if record.draft_features is None:
        raise ValueError(f"trace request {record.request_id}: no draft_features recorded")
    if len(record.draft_features) != len(record.acceptance_seq):
        raise ValueError(
            f"trace request {record.request_id}: {len(record.draft_features)} feature rows "
            f"for {len(record.acceptance_seq)} positions"
        )


def build_dataset(records: Sequence[TraceRecord], k_max: int) -> StopDataset:
    """The dataset of ``records`` replayed at window ``k_max`` (see the module docstring)."""
    features: list[Sequence[float]] = []
    labels: list[int] = []
    groups: list[int] = []
    for index, record in enumerate(records):
        check_record(record)
        assert record.draft_features is not None
        for position, label in window_rows(record.acceptance_seq, k_max):
            features.append(record.draft_features[position])
            labels.append(label)
            groups.append(index)
    width = len(STOP_FEATURE_NAMES)
    return StopDataset(
        features=np.asarray(features, dtype=np.float64).reshape(-1, width),
        labels=np.asarray(labels, dtype=np.int64),
        groups=np.asarray(groups, dtype=np.int64),
        request_ids=tuple(r.request_id for r in records),
    )


def require_both_labels(parts: Sequence[tuple[str, StopDataset]]) -> None:
    """A ``ValueError`` naming the first part (``training``, ...) whose rows hold no first
    rejection or no accepted position: a predictor could neither learn nor be measured
    there (and the tree baselines fail on one class)."""
    for name, part in parts:
        num_rejected = int((part.labels == 0).sum())
        if num_rejected and num_rejected < len(part):
            continue
        missing = "first rejection" if not num_rejected else "accepted position"
        seen = "accepted" if not num_rejected else "first rejections"
        raise ValueError(
            f"no {missing} in the {name} requests: all {len(part)} positions they draft are "
            f"{seen} ({len(np.unique(part.groups))} requests; the study needs accepted "
            "positions and first rejections in the training, validation and test requests)"
        )


def split_by_request(
    data: StopDataset, fractions: tuple[float, float, float], seed: int
) -> tuple[StopDataset, StopDataset, StopDataset]:
    """Train / validation / test subsets holding disjoint requests, shuffled with ``seed``;
    ``fractions`` (summing to 1) are of requests, not rows."""
    if abs(sum(fractions) - 1.0) > 1e-9 or min(fractions) <= 0:
        raise ValueError(f"split fractions must be positive and sum to 1, got {fractions}")
    requests = np.unique(data.groups)
    if len(requests) < 3:
        raise ValueError(
            f"need at least 3 requests with drafted positions to split, got {len(requests)}"
        )
    order = np.random.default_rng(seed).permutation(requests)
    num_train = max(1, round(fractions[0] * len(order)))
    num_val = max(1, round(fractions[1] * len(order)))
    num_train = min(num_train, len(order) - 2)
    parts = (
        order[:num_train],
        order[num_train : num_train + num_val],
        order[num_train + num_val :],
    )
    subsets = tuple(data.subset(np.isin(data.groups, part)) for part in parts)
    return subsets[0], subsets[1], subsets[2]
