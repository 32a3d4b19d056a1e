"""A draft block's q held as each row's nonzero entries (:class:`CompactProbs`): what a
compact ``VerifyRequest`` q decodes to (:mod:`edgespec.runtime.wire.draft_probs`) and what
the server keeps while the call is queued, checked
(:func:`~edgespec.runtime.validation.check_draft_probs`) and verified, so a call holds
memory of its message's size, not K × the vocabulary. Only the verifier reads a row
densely, the one it rejects (:meth:`CompactProbs.drawn`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from edgespec.core.speculative import DrawnRows


@dataclass(frozen=True, slots=True, eq=False)
class CompactProbs:
    """K rows over ``vocab_size`` tokens: row i's nonzero entries are tokens
    ``ids[offsets[i]:offsets[i + 1]]`` (ascending, each once) with probabilities
    ``values[...]`` (float32); every other entry is 0. Built checked (the wire decoder
    checks the ids; :func:`~edgespec.runtime.validation.check_draft_probs` the values)."""

    offsets: npt.NDArray[np.int64]
    ids: npt.NDArray[np.int32]
    values: npt.NDArray[np.float32]
    vocab_size: int

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.offsets) - 1, self.vocab_size)

    @property
    def nbytes(self) -> int:
        """The bytes its arrays hold (linear in the entries sent, not in the vocabulary)."""
        return int(self.offsets.nbytes + self.ids.nbytes + self.values.nbytes)

    def row_sums(self) -> npt.NDArray[np.float64]:
        """Each row's total (float64)."""
        rows = np.repeat(np.arange(self.shape[0]), np.diff(self.offsets))
        sums = np.bincount(rows, weights=self.values, minlength=self.shape[0])
        return np.asarray(sums, dtype=np.float64)

    def prob(self, row: int, token: int) -> float:
        """Row ``row``'s probability of ``token`` (0 when it is not among its entries)."""
        start, end = int(self.offsets[row]), int(self.offsets[row + 1])
        at = start + int(np.searchsorted(self.ids[start:end], token))
        return float(self.values[at]) if at < end and self.ids[at] == token else 0.0

    def dense(self) -> npt.NDArray[np.float32]:
        """K × V float32 rows (for tests and small vocabularies; the server never needs it)."""
        rows = np.zeros(self.shape, dtype=np.float32)
        index = np.repeat(np.arange(self.shape[0]), np.diff(self.offsets))
        rows[index, self.ids] = self.values
        return rows

    def drawn(self) -> DrawnRows:
        """The rows as drawn (:func:`~edgespec.core.speculative.as_drawn`), bit for bit: each
        row's float64 sum is taken over its entries in token order, as the dense row's
        cumulative sum (its zeros add nothing)."""
        return _CompactDrawn(self)


@dataclass(slots=True)
class _CompactDrawn:
    """:class:`~edgespec.core.speculative.DrawnRows` of a :class:`CompactProbs`; each row's
    total computed when the row is first read."""

    q: CompactProbs
    _totals: dict[int, float] = field(default_factory=dict)

    def _values(self, row: int) -> npt.NDArray[np.float64]:
        start, end = int(self.q.offsets[row]), int(self.q.offsets[row + 1])
        return self.q.values[start:end].astype(np.float64)

    def _total(self, row: int) -> float:
        if row not in self._totals:
            values = self._values(row)
            self._totals[row] = float(np.cumsum(values)[-1]) if values.size else 0.0
        return self._totals[row]

    def prob(self, row: int, token: int) -> float:
        return float(np.float64(self.q.prob(row, token)) / self._total(row))

    def row(self, row: int) -> npt.NDArray[np.float64]:
        dense = np.zeros(self.q.vocab_size, dtype=np.float64)
        start, end = int(self.q.offsets[row]), int(self.q.offsets[row + 1])
        dense[self.q.ids[start:end]] = self._values(row) / self._total(row)
        return dense
