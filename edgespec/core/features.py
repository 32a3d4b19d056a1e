"""Draft-logit features for WISP's rejection predictor (WISP §4.1, App. B).

All features are computed per drafted position from the draft model's logits over the
vocabulary, before sampling. They are cheap (one softmax and a partial sort per row)
so a device can compute them while drafting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class DraftFeatures:
    """Statistics of one draft position's distribution.

    - ``confidence``: max_x q(x), the probability of the most likely token.
    - ``entropy_nats``: −Σ q log q.
    - ``margin``: q(top-1) − q(top-2).
    - ``logit_std``: standard deviation of the raw logits over the vocabulary.
    - ``top5_mass``: Σ of the five largest probabilities (how peaked the head is).
    - ``position``: index of the position inside the draft block (0-based).
    """

    confidence: float
    entropy_nats: float
    margin: float
    logit_std: float
    top5_mass: float
    position: int

    def as_vector(self) -> tuple[float, ...]:
        return (
            self.confidence,
            self.entropy_nats,
            self.margin,
            self.logit_std,
            self.top5_mass,
            float(self.position),
        )


FEATURE_NAMES: tuple[str, ...] = (
    "confidence",
    "entropy_nats",
    "margin",
    "logit_std",
    "top5_mass",
    "position",
)


def softmax(logits: npt.ArrayLike, temperature: float = 1.0) -> npt.NDArray[np.float64]:
    """Numerically stable softmax of ``logits / temperature`` along the last axis, in float64
    (worked on in place in one copy: a row of a 262,144-token vocabulary is 2 MiB)."""
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    probs = np.asarray(logits).astype(np.float64)
    probs /= temperature
    probs -= probs.max(axis=-1, keepdims=True)
    np.exp(probs, out=probs)
    probs /= probs.sum(axis=-1, keepdims=True)
    return probs


def feature_matrix(logits: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Features for every row of a K × V logit matrix, as a K × len(FEATURE_NAMES) array."""
    z = np.atleast_2d(np.asarray(logits, dtype=np.float64))
    if z.ndim != 2 or z.shape[1] < 2:
        raise ValueError(f"expected a K×V logit matrix with V >= 2, got shape {z.shape}")
    probs = softmax(z)
    num_top = min(5, z.shape[1])
    top = -np.sort(-np.partition(probs, z.shape[1] - num_top, axis=1)[:, -num_top:], axis=1)
    log_probs = np.log(np.clip(probs, 1e-300, None))
    entropy = -(probs * log_probs).sum(axis=1)
    return np.stack(
        [
            top[:, 0],
            entropy,
            top[:, 0] - top[:, 1],
            z.std(axis=1),
            top.sum(axis=1),
            np.arange(z.shape[0], dtype=np.float64),
        ],
        axis=1,
    )


def draft_features(logits: npt.ArrayLike) -> tuple[DraftFeatures, ...]:
    """Per-position :class:`DraftFeatures` for a K × V (or V) logit array."""
    return tuple(
        DraftFeatures(
            confidence=float(row[0]),
            entropy_nats=float(row[1]),
            margin=float(row[2]),
            logit_std=float(row[3]),
            top5_mass=float(row[4]),
            position=int(row[5]),
        )
        for row in feature_matrix(logits)
    )


FEATURE_DIGITS = 4
"""Decimals kept of each trace / stop-predictor feature. Traces store features rounded to
this, and the live drafter rounds the same way before asking a stop predictor, so that a
simulated replay of a trace and the real drafter give the predictor identical inputs."""


def stop_features(logits: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """The K × 5 feature rows a stop predictor sees (``confidence, entropy_nats, margin,
    logit_std, top5_mass``; no in-block position), rounded to :data:`FEATURE_DIGITS`."""
    return np.round(feature_matrix(logits)[:, :5], FEATURE_DIGITS)


FeatureRows = tuple[tuple[float, ...], ...]


def parse_feature_rows(raw: object, count: int | None = None) -> FeatureRows:
    """JSON feature rows (lists of 5 finite numbers; ``count`` of them when given) as
    tuples; ``ValueError`` saying what is wrong otherwise, a NaN or infinity (JSON's
    ``NaN``, ``Infinity``) by its row and feature (trace files, both readers)."""
    if not isinstance(raw, list) or (count is not None and len(raw) != count):
        wanted = "a list" if count is None else f"{count} rows (one per output token)"
        raise ValueError(f"expected {wanted} of 5 numbers")
    rows = []
    for index, row in enumerate(raw):
        ok = isinstance(row, list) and len(row) == 5
        if not ok or any(isinstance(v, bool) or not isinstance(v, int | float) for v in row):
            raise ValueError(f"expected rows of 5 numbers, got {row!r}")
        values = tuple(float(v) for v in row)
        for name, value in zip(FEATURE_NAMES, values, strict=False):
            if not math.isfinite(value):
                raise ValueError(f"row {index}: {name} is {value}, expected a finite number")
        rows.append(values)
    return tuple(rows)


def parse_rejection_rows(raw: object) -> tuple[tuple[int, FeatureRows], ...]:
    """A trace's ``rejection_features``: ``[[position, [[5 numbers], ...]], ...]``; a bad
    row is named by its position."""
    if not isinstance(raw, list):
        raise ValueError("expected [[position, [[5 numbers], ...]], ...]")
    parsed = []
    for item in raw:
        if not (isinstance(item, list) and len(item) == 2 and type(item[0]) is int):
            raise ValueError(f"expected [position, rows], got {item!r}")
        try:
            parsed.append((item[0], parse_feature_rows(item[1])))
        except ValueError as exc:
            raise ValueError(f"position {item[0]}: {exc}") from None
    return tuple(parsed)
