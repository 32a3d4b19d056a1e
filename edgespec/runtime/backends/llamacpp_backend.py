"""The llama.cpp :class:`~edgespec.runtime.backends.base.TargetBackend`
(``edgespec serve --backend llamacpp``).

Each session's KV state is a llama.cpp sequence of the backend's one context
(:class:`~edgespec.runtime.backends.llamacpp_context.LlamaContext`): a :class:`LlamaKV` names
the sequence and how many of its cells the state covers. A forward pass puts every item's new
tokens into one multi-sequence ``llama_decode`` batch at their true positions, with logits
only for each item's last ``num_logits`` tokens, the tokens whose hidden states are read in
a second batch with llama.cpp's embeddings on (which outputs every token of a batch:
:mod:`~edgespec.runtime.backends.llamacpp_batch`); no padding, so a cold start beside
follow-ups costs its own tokens only. ``crop`` trims the sequence in place
(``llama_memory_seq_rm``) and returns a state of the new length; the older state of the
same sequence is stale from then on and is refused. A sequence goes
back to the free list when the engine drops the last state naming it (it is cleared at the
next forward, on the decode thread). A token tree's context tokens share the batch; its
nodes are then decoded on the session's sequence each on top of its own ancestors
(:mod:`~edgespec.runtime.backends.llamacpp_tree`), and ``gather`` keeps the accepted path.
Hidden states of a token tree are not returned.

The context has a fixed number of sequences: at most that many sessions can hold a KV cache
at once (``edgespec serve`` caps ``max_sessions`` to it). At load, the exactness self-check
(:func:`~edgespec.runtime.backends.exactness.exactness_problem`) compares one-at-a-time
logits with batched ones; any difference refuses the backend
(:class:`~edgespec.runtime.backends.exactness.InexactBackendError`) unless it was made
with ``exact=False`` (the lossy mode, chosen by name), which only reports it.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from edgespec.runtime.backends.base import ForwardItem, ForwardOutput
from edgespec.runtime.backends.exactness import InexactBackendError, exactness_problem
from edgespec.runtime.backends.llamacpp_batch import Rows, decode_items
from edgespec.runtime.backends.llamacpp_context import LlamaContext, LlamaCppSettings
from edgespec.runtime.backends.llamacpp_tree import TreeTail, decode_tree, keep_path
from edgespec.runtime.backends.logit_rows import HostRows

TREE_HIDDEN = "the llamacpp backend returns no hidden states of token trees"


class SequencesExhaustedError(RuntimeError):
    """Every llama.cpp sequence holds a session's KV cache."""


class _Slot:
    """A llama.cpp sequence held for one session; ``length``: its cells now."""

    __slots__ = ("__weakref__", "length", "seq")

    def __init__(self, seq: int) -> None:
        self.seq, self.length = seq, 0


@dataclass(frozen=True, slots=True, eq=False)
class LlamaKV:
    """One session's KV state: the first ``length`` cells of ``slot``'s sequence; after a
    token tree, ``length`` counts every node and ``tree`` says which path the cells hold."""

    slot: _Slot
    length: int
    tree: TreeTail | None = None

    @property
    def cells(self) -> int:
        """The cells the sequence must hold for this state to be current."""
        return self.length if self.tree is None else self.tree.base + len(self.tree.held)


class _SequencePool:
    """Free sequence ids; a released id is cleared at the next :meth:`drain` (on the decode
    thread: a finalizer may run on any thread)."""

    def __init__(self, size: int) -> None:
        self._free = list(range(size - 1, -1, -1))
        self._released: list[int] = []
        self._lock = threading.Lock()
        self.size = size

    def release(self, seq: int) -> None:
        with self._lock:
            self._released.append(seq)

    def drain(self, ctx: LlamaContext) -> None:
        with self._lock:
            released, self._released = self._released, []
        for seq in released:
            ctx.trim(seq, 0)
            self._free.append(seq)

    def acquire(self) -> _Slot:
        if not self._free:
            raise SequencesExhaustedError(
                f"all {self.size} llama.cpp sequences hold a session's KV cache (raise "
                "--llamacpp-sequences or lower max_sessions)"
            )
        slot = _Slot(self._free.pop())
        weakref.finalize(slot, self.release, slot.seq)
        return slot

    @property
    def num_free(self) -> int:
        with self._lock:
            return len(self._free) + len(self._released)


class LlamaCppTarget:
    """:class:`~edgespec.runtime.backends.base.TargetBackend` over one llama.cpp context."""

    tree_hidden_problem = TREE_HIDDEN
    """Why a ``return_hidden`` session's token tree is refused (at admission: in a pass it
    failed the whole batch)."""

    def __init__(self, settings: LlamaCppSettings) -> None:
        if settings.sequences < 2:
            raise ValueError(
                f"a llama.cpp target needs >= 2 sequences (its self-check runs two), got "
                f"{settings.sequences}"
            )
        self._ctx = LlamaContext(settings, served=True)
        self._pool = _SequencePool(settings.sequences)
        self._lock = threading.Lock()
        self.exact = settings.exact
        self.numerics = "llamacpp" if settings.exact else "llamacpp-lossy"  # Health says it
        self.bytes_per_token = self._measure_bytes_per_token()
        problem = exactness_problem(self, max_rows=settings.sequences)
        self.inexactness = problem
        if problem is not None and settings.exact:
            self.close()
            raise InexactBackendError(
                f"llama.cpp is not batch-invariant here ({problem}); refusing to serve "
                "approximately (the lossy mode must be chosen by name: --backend llamacpp-lossy)"
            )

    @property
    def vocab_size(self) -> int:
        return self._ctx.vocab_size

    @property
    def eos_token_ids(self) -> frozenset[int]:
        return self._ctx.eos_token_ids

    @property
    def max_context_tokens(self) -> int:
        return self._ctx.context_tokens

    @property
    def hidden_size(self) -> int:
        return self._ctx.hidden_size

    @property
    def sequences(self) -> int:
        return self._pool.size

    @property
    def gpu_note(self) -> str:
        """What serving says of the context's GPU layers (none on a build without a GPU)."""
        return self._ctx.gpu_note

    def close(self) -> None:
        with self._lock:
            self._ctx.close()

    def forward(self, items: Sequence[ForwardItem]) -> list[ForwardOutput]:
        """Every item in one multi-sequence decode (see the module docstring)."""
        with self._lock:
            self._pool.drain(self._ctx)
            for item in items:
                self._check(item)
            slots = self._slots(items)
            try:
                decoded = decode_items(self._ctx, items, [slot.seq for slot in slots])
                return self._outputs(items, slots, decoded)
            except Exception:
                for item, slot in zip(items, slots, strict=True):
                    self._ctx.trim(slot.seq, item.kv_len)  # as before the pass
                    slot.length = item.kv_len
                raise

    def _check(self, item: ForwardItem) -> None:
        if item.tree_parents is not None and item.want_hidden:
            raise ValueError(TREE_HIDDEN)
        end = item.kv_len + len(item.new_token_ids)
        if end > self._ctx.context_tokens:
            raise ValueError(
                f"{end} tokens exceed the llama.cpp sequence length {self._ctx.context_tokens}"
            )
        if item.kv is None:
            if item.kv_len != 0:
                raise ValueError(f"no KV state but kv_len={item.kv_len}")
            return
        if not isinstance(item.kv, LlamaKV):
            raise TypeError(f"not a llama.cpp KV state: {type(item.kv).__name__}")
        if item.kv.tree is not None:
            raise ValueError("a token tree's KV state must be gathered before it is extended")
        if not item.kv.length == item.kv.slot.length == item.kv_len:
            raise ValueError(
                f"stale KV state: it covers {item.kv.length} tokens, its sequence "
                f"{item.kv.slot.length}, the item says {item.kv_len}"
            )

    def _slots(self, items: Sequence[ForwardItem]) -> list[_Slot]:
        slots: list[_Slot] = []
        try:
            for item in items:
                slots.append(item.kv.slot if isinstance(item.kv, LlamaKV) else self._pool.acquire())
        except SequencesExhaustedError:
            slots.clear()  # the new slots' finalizers give them back
            raise
        return slots

    def _outputs(
        self,
        items: Sequence[ForwardItem],
        slots: Sequence[_Slot],
        decoded: Sequence[Rows],
    ) -> list[ForwardOutput]:
        results = []
        for item, slot, (rows, hidden) in zip(items, slots, decoded, strict=True):
            length = item.kv_len + len(item.new_token_ids)
            tail = None
            if item.tree_parents is not None:
                base, nodes = item.kv_len + item.num_context, item.new_token_ids[item.num_context :]
                tree_rows, tail = decode_tree(self._ctx, slot.seq, base, nodes, item.tree_parents)
                rows = np.concatenate([rows, tree_rows])
            kv = LlamaKV(slot, length, tail)
            slot.length = kv.cells
            own = rows[len(rows) - item.num_logits :].copy()
            results.append(ForwardOutput(HostRows(own), kv, hidden))
        return results

    def crop(self, kv: LlamaKV, num_tokens: int) -> LlamaKV:
        """Trim ``kv``'s sequence in place to ``num_tokens``; ``kv`` itself is stale after.
        A token tree's state crops to its prefix at most (else :meth:`gather`)."""
        limit = kv.length if kv.tree is None else kv.tree.base
        if not 0 <= num_tokens <= limit or kv.cells != kv.slot.length:
            raise ValueError(f"cannot crop a {kv.length}-token KV state to {num_tokens}")
        with self._lock:
            if num_tokens < kv.slot.length:
                self._ctx.trim(kv.slot.seq, num_tokens)
            kv.slot.length = num_tokens
        return LlamaKV(kv.slot, num_tokens)

    def gather(self, kv: LlamaKV, positions: Sequence[int]) -> LlamaKV:
        """A prefix (any state), or a token tree's prefix plus one root path of it."""
        kept = list(positions)
        if kv.tree is None or len(kept) <= kv.tree.base:
            if kept != list(range(len(kept))):
                raise ValueError(f"positions {kept[:8]}… are no prefix of a chain's KV state")
            return self.crop(kv, len(kept))
        base = kv.tree.base
        if kept[:base] != list(range(base)) or kv.cells != kv.slot.length:
            raise ValueError(f"cannot gather positions {kept[:8]}… from this token tree")
        with self._lock:
            length = keep_path(self._ctx, kv.slot.seq, kv.tree, [p - base for p in kept[base:]])
            kv.slot.length = length
        return LlamaKV(kv.slot, length)

    def kv_bytes(self, kv: LlamaKV) -> int:
        return kv.length * self.bytes_per_token

    def _measure_bytes_per_token(self) -> int:
        """The KV bytes of one token: llama.cpp's saved size of a 5- and a 1-token sequence."""
        slot = self._pool.acquire()
        sizes = []
        for length in (1, 5):
            self._ctx.decode([(1, p, slot.seq, False) for p in range(length)])
            sizes.append(self._ctx.sequence_bytes(slot.seq))
            self._ctx.trim(slot.seq, 0)
        return max(1, (sizes[1] - sizes[0]) // 4)
