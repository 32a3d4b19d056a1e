"""Every target backend's load-time exactness self-check: batched logits against
one-at-a-time logits, bit for bit (:func:`exactness_problem`).

Lossless speculative decoding promises the target's own output. Target-only decoding
feeds one token at a time; verification feeds blocks of γ + 1 tokens beside other
sessions' blocks, padded to one shape. When a kernel's reduction order depends on that
shape the two differ in their last bits and a greedy argmax (or a sampled token at a
threshold) can flip, so the exact backends (``--backend transformers``, ``llamacpp``)
refuse to serve unless the probe below finds the same bits, on the device and dtype in
use; the lossy ones (``transformers-lossy``, ``llamacpp-lossy``) serve anyway and report
what differed.

The probe decodes a sequence S one token at a time (as long as the model's sliding window
plus six tokens, so that blocks are cached past the window; 12 tokens without a window, or
enough that the cold block below spans two of the backend's row chunks)
and a 5-token sequence T the same way, then compares, each against those rows (a backend
that can extend a KV without computing logits, :data:`ExtendKV`, skips the LM head at the
positions no comparison reads: at Gemma 3's 262k vocabulary the head is over half of a
one-token pass):

* a cold block (S without its last 4 tokens in one pass, its last 2 rows);
* a follow-up beside a cold start (S's last 4 tokens on that cache, beside T cold):
  uneven rows, the follow-up's new tokens padded past the window;
* a re-decode after a crop (S cropped back by 3, its last 3 tokens again);
* a padded batch of four (a 3-token follow-up of S, a 2-token cold start of T, a 1-token
  follow-up of T, a 2-token follow-up early in S): four contexts, four block sizes.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from edgespec.runtime.backends.base import ForwardItem, KVState, TargetBackend

SHORT_PROBE_TOKENS = 12
PAST_WINDOW_TOKENS = 6

ExtendKV = Callable[[KVState | None, int, int], KVState]
"""``extend(kv, kv_len, token)``: the KV after forwarding ``token`` at position ``kv_len``
on ``kv`` in a one-token pass of its own, the same computation as :meth:`TargetBackend.forward`
without the LM head."""


class InexactBackendError(RuntimeError):
    """Batched and one-at-a-time logits differ: serving would not be lossless."""


@dataclass(frozen=True, slots=True)
class Inexactness:
    """Where a probe's batched logits first differed from one token at a time."""

    shape: str
    max_abs_delta: float
    num_argmax_flips: int
    num_rows: int

    def __str__(self) -> str:
        return (
            f"{self.shape}: max |Δlogit| {self.max_abs_delta:.3g} against one token at a "
            f"time, {self.num_argmax_flips} of {self.num_rows} argmax flips"
        )


def probe_length(sliding_window: int | None, max_context_tokens: int, row_chunk: int = 1) -> int:
    """S's length: past the window by :data:`PAST_WINDOW_TOKENS`, within the context, and
    long enough that its cold block (S less 4 tokens) is more than one ``row_chunk`` (the
    rows a backend's product takes at once: a one-token pass is one chunk)."""
    shortest = max(SHORT_PROBE_TOKENS, row_chunk + 5)
    if sliding_window is None:
        return shortest
    return max(shortest, min(sliding_window + PAST_WINDOW_TOKENS, max_context_tokens))


def exactness_problem(
    target: TargetBackend,
    length: int = SHORT_PROBE_TOKENS,
    max_rows: int = 4,
    extend: ExtendKV | None = None,
    on_pass: Callable[[int, int], None] | None = None,
) -> Inexactness | None:
    """How ``target``'s batched logits differ from its one-token-at-a-time logits over the
    probe shapes (module doc) with S ``length`` tokens long, or ``None`` when every row
    is the same bits. ``max_rows``: the most KV states the backend holds at once (the
    batch of four needs four; llama.cpp holds one per sequence). ``extend``: the
    backend's pass without logits, for the positions no comparison reads. ``on_pass``:
    told (done, of) after each one-token pass, the probe's bulk (a start-up's progress)."""
    if length < SHORT_PROBE_TOKENS:
        raise ValueError(f"the probe sequence needs >= {SHORT_PROBE_TOKENS} tokens, got {length}")
    vocab = target.vocab_size
    seq = tuple((7 * i + 3) % vocab for i in range(length))
    side = tuple((11 * i + 5) % vocab for i in range(5))
    compared = {5, 6, *range(length - 6, length)}  # the rows the checks below read
    passes = iter(range(1, length + len(side) + 1))

    def tick() -> None:
        if on_pass is not None:
            on_pass(next(passes), length + len(side))

    alone = _one_at_a_time(target, seq, compared, extend, tick)
    alone_side = _one_at_a_time(target, side, range(len(side)), extend, tick)
    cut = length - 4
    head = target.forward([ForwardItem(None, 0, seq[:cut], 2)])[0]
    pair = target.forward([ForwardItem(head.kv, cut, seq[cut:], 4), ForwardItem(None, 0, side, 5)])
    again = target.forward(
        [ForwardItem(target.crop(pair[0].kv, length - 3), length - 3, seq[-3:], 3)]
    )[0]
    checks = [
        ("a cold block", head.logits, alone[cut - 2 : cut]),
        ("a follow-up beside a cold start", pair[0].logits, alone[cut:]),
        ("a cold start beside a follow-up", pair[1].logits, alone_side[:]),
        ("a re-decode after a crop", again.logits, alone[length - 3 :]),
    ]
    del head, pair, again  # a llama.cpp sequence is free again once no state names it
    if max_rows >= 4:
        checks += _batch_of_four(target, seq, side, alone, alone_side)
    for shape, got, want in checks:
        if not np.array_equal(got, want):
            flips = int((got.argmax(-1) != want.argmax(-1)).sum())
            return Inexactness(shape, float(np.abs(got - want).max()), flips, len(want))
    return None


def _batch_of_four(
    target: TargetBackend,
    seq: tuple[int, ...],
    side: tuple[int, ...],
    alone: _Rows,
    alone_side: _Rows,
) -> list[tuple[str, npt.NDArray[np.float32], npt.NDArray[np.float32]]]:
    cut = len(seq) - 6
    long_head = target.forward([ForwardItem(None, 0, seq[:cut], 1)])[0]
    short_head = target.forward([ForwardItem(None, 0, seq[:5], 1)])[0]
    side_head = target.forward([ForwardItem(None, 0, side[:3], 1)])[0]
    four = target.forward(
        [
            ForwardItem(long_head.kv, cut, seq[cut : cut + 3], 3),
            ForwardItem(None, 0, side[:2], 2),
            ForwardItem(side_head.kv, 3, side[3:4], 1),
            ForwardItem(short_head.kv, 5, seq[5:7], 2),
        ]
    )
    return [
        ("a padded batch of four (3-token follow-up)", four[0].logits, alone[cut : cut + 3]),
        ("a padded batch of four (2-token cold start)", four[1].logits, alone_side[:2]),
        ("a padded batch of four (1-token follow-up)", four[2].logits, alone_side[3:4]),
        ("a padded batch of four (early follow-up)", four[3].logits, alone[5:7]),
    ]


class _Rows:
    """One-at-a-time logit rows of the positions computed; slicing any other raises."""

    def __init__(self, rows: dict[int, npt.NDArray[np.float32]]) -> None:
        self._rows = rows

    def __getitem__(self, where: slice) -> npt.NDArray[np.float32]:
        start, stop, _ = where.indices(max(self._rows) + 1)
        missing = [i for i in range(start, stop) if i not in self._rows]
        if missing:
            raise KeyError(f"the probe did not compute one-at-a-time rows {missing}")
        return np.stack([self._rows[i] for i in range(start, stop)])


def _one_at_a_time(
    target: TargetBackend,
    tokens: Sequence[int],
    compared: Collection[int],
    extend: ExtendKV | None,
    tick: Callable[[], None] = lambda: None,
) -> _Rows:
    """Each token forwarded alone on the previous ones' KV (``tick`` after each); the
    logits of ``compared`` positions (of every position without ``extend``)."""
    kv, rows = None, {}
    for i, token in enumerate(tokens):
        if extend is not None and i not in compared:
            kv = extend(kv, i, token)
        else:
            out = target.forward([ForwardItem(kv, i, (token,), 1)])[0]
            kv = out.kv
            rows[i] = out.logits[0]
        tick()
    return _Rows(rows)
