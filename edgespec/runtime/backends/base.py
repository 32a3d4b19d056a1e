"""Backend interfaces: what the engine needs from a target model, the drafter from a draft.

A target backend runs one batched forward pass over many sessions' new tokens, each on
top of that session's own KV prefix (an opaque :class:`KVState` the backend created).
The engine owns the states (memory budget, LRU eviction, trimming); the backend only
knows how to extend, crop and measure them. A vLLM backend would implement the same
Protocol with paged blocks instead of per-session tensors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from edgespec.core.tree import tree_problem
from edgespec.policies.stop_drafting import DraftStopPolicy
from edgespec.runtime.backends.draft_shaping import DraftShaping
from edgespec.runtime.backends.logit_rows import LogitRows

KVState = Any
"""Backend-specific KV cache of one session (covers its first ``kv_len`` tokens)."""


@dataclass(frozen=True, slots=True)
class ForwardItem:
    """One session's part of a batched forward pass.

    ``kv`` covers the session's first ``kv_len`` tokens (``None`` and 0 for a cold
    start); ``new_token_ids`` are forwarded at positions ``kv_len ..``; logits are
    returned for the last ``num_logits`` of them. ``want_hidden`` asks for the
    last-layer hidden states of every new token too (:attr:`ForwardOutput.hidden`);
    ``hidden_of_logits_only`` says only those of the last ``num_logits`` are needed (a
    semantic rule's K + 1 rows), so a backend that must compute a logit row for every
    hidden row it returns (llama.cpp) computes no more rows than ``num_logits``.

    ``tree_parents``, when given, makes the last ``len(tree_parents)`` new tokens a token
    tree (:mod:`edgespec.core.tree`) hanging off the new token just before them: tree node
    i sits at position ``kv_len + c - 1 + depth(i)`` (c = the new tokens before the tree)
    and attends only to the tokens before the tree and to its own ancestors.
    """

    kv: KVState | None
    kv_len: int
    new_token_ids: tuple[int, ...]
    num_logits: int
    want_hidden: bool = False
    tree_parents: tuple[int, ...] | None = None
    hidden_of_logits_only: bool = False

    def __post_init__(self) -> None:
        if not self.new_token_ids:
            raise ValueError("a forward item needs at least one new token")
        if not 1 <= self.num_logits <= len(self.new_token_ids):
            raise ValueError(f"num_logits={self.num_logits} outside 1..{len(self.new_token_ids)}")
        if self.tree_parents is not None:
            if len(self.tree_parents) >= len(self.new_token_ids):
                raise ValueError("a token tree needs at least one new token before it")
            problem = tree_problem(self.tree_parents, len(self.tree_parents))
            if problem is not None:
                raise ValueError(problem)

    @property
    def num_context(self) -> int:
        """New tokens before the tree (all of them when there is none)."""
        return len(self.new_token_ids) - len(self.tree_parents or ())


@dataclass(frozen=True, slots=True, eq=False)
class ForwardOutput:
    """The item's logit rows (``num_logits`` × V, :class:`LogitRows`) and the extended KV
    state (covering ``kv_len + len(new_token_ids)`` tokens).

    ``hidden``: when the item had ``want_hidden``, the target's last-layer hidden states
    (the LM head's input, after the final norm) of EVERY new token of the item,
    ``len(new_token_ids)`` × hidden_size float32 (with ``hidden_of_logits_only``, the last
    ``num_logits`` rows at least: a backend may return only those); otherwise ``None``.
    """

    rows: LogitRows
    kv: KVState
    hidden: npt.NDArray[np.float32] | None = None

    @property
    def logits(self) -> npt.NDArray[np.float32]:
        """The rows on the host (float32): what a caller that needs every value reads; a
        greedy verdict asks ``rows.argmax()`` and leaves them where they are."""
        return self.rows.host()


@runtime_checkable
class TargetBackend(Protocol):
    """A verifier model. ``forward`` must give each item the same logits it would get
    alone (up to float rounding): padding and batching are the backend's business."""

    @property
    def vocab_size(self) -> int: ...

    @property
    def eos_token_ids(self) -> frozenset[int]: ...

    @property
    def max_context_tokens(self) -> int:
        """Longest sequence (prompt + output + draft) the model can attend over."""
        ...

    def forward(self, items: Sequence[ForwardItem]) -> list[ForwardOutput]:
        """Run all items in one batched forward pass."""
        ...

    def crop(self, kv: KVState, num_tokens: int) -> KVState:
        """Keep only the first ``num_tokens`` positions of ``kv`` (a new, compact state)."""
        ...

    def gather(self, kv: KVState, positions: Sequence[int]) -> KVState:
        """Keep only ``positions`` (ascending) of ``kv``, in that order: the accepted path
        of a token tree after its verification (a new, compact state)."""
        ...

    def kv_bytes(self, kv: KVState) -> int:
        """Memory held by ``kv``."""
        ...


@dataclass(frozen=True, slots=True, eq=False)
class DraftProposal:
    """γ drafted tokens and, for stochastic verification, the draft distribution q
    (γ × V float32, row i used to sample token i). Deterministic drafters give one-hot q.

    A tree drafter sets ``parents`` (:mod:`edgespec.core.tree`): then ``token_ids`` are
    the tree's nodes, γ is its depth, and ``probs`` is ``None``: each node is proposed for
    certain, greedy or sampling.

    ``num_passes``: draft forward passes run for the block; ``None`` means
    ``len(token_ids)``. A block a stop predictor ended early ran one more pass than it holds
    (the token it stopped on is drafted but not sent); a tree ran one pass per depth.

    ``hidden``: for a drafter asked for them (:class:`HiddenStateDraftBackend`), the draft's
    last-layer hidden state (after the final norm) at the input position whose logits
    predicted each token, ``len(token_ids)`` × hidden_size float32; else ``None``."""

    token_ids: tuple[int, ...]
    probs: npt.NDArray[np.float32] | None
    parents: tuple[int, ...] | None = None
    num_passes: int | None = None
    hidden: npt.NDArray[np.float32] | None = None


@runtime_checkable
class DraftBackend(Protocol):
    """A drafter: proposes ``gamma`` tokens after ``context`` (all committed tokens).

    It may keep its own cache across calls; ``context`` always starts with the tokens
    of the previous call's context (the committed sequence only grows). ``shaping``: the
    request's bias, penalties and cuts to make on its rows before choosing
    (:mod:`.draft_shaping`); a drafter without rows (prompt lookup) proposes as without it.

    A drafter that can end a block at a stop predictor's first predicted rejection
    (:mod:`edgespec.policies.stop_drafting`) is also a :class:`StoppingDraftBackend`; the
    drafter loop reaches either through :func:`propose_block`.
    """

    def propose(
        self,
        context: Sequence[int],
        gamma: int,
        temperature: float,
        rng: np.random.Generator,
        shaping: DraftShaping | None = None,
    ) -> DraftProposal: ...

    def reset(self) -> None:
        """Forget cached state (a new sequence starts)."""
        ...


@runtime_checkable
class StoppingDraftBackend(DraftBackend, Protocol):
    """A chain drafter that asks a stop predictor, token by token, whether to go on."""

    def stop_problem(self) -> str | None:
        """Why this drafter cannot stop token by token after all (a subclass drafting
        something else than a chain), or ``None``."""
        ...

    def propose_until_stop(
        self,
        context: Sequence[int],
        gamma: int,
        temperature: float,
        rng: np.random.Generator,
        stop: DraftStopPolicy,
        shaping: DraftShaping | None = None,
    ) -> DraftProposal:
        """:meth:`propose` with K_max = ``gamma``, following the call order of
        :class:`~edgespec.policies.stop_drafting.DraftStopPolicy`: after each draft forward
        ``stop`` sees that position's :func:`~edgespec.core.features.stop_features` row; the
        token it rejects is drafted (counted in ``num_passes``) but not in ``token_ids``, and
        drafting ends there. Raises ``ValueError`` naming the drafter when it cannot."""
        ...


@runtime_checkable
class HiddenStateDraftBackend(DraftBackend, Protocol):
    """A chain drafter that can return its hidden states with each block
    (:attr:`DraftProposal.hidden`), for semantic verification; off until asked."""

    def hidden_problem(self) -> str | None:
        """Why this drafter cannot return them after all (it drafts no single chain), or
        ``None``."""
        ...

    def return_hidden(self, on: bool) -> int:
        """Return hidden states with every block from now on (``on``) or stop; the hidden
        size."""
        ...


def hidden_state_drafter(drafter: DraftBackend) -> HiddenStateDraftBackend:
    """``drafter`` as a :class:`HiddenStateDraftBackend`; ``ValueError`` naming it when it
    cannot return its hidden states."""
    if isinstance(drafter, HiddenStateDraftBackend):
        problem = drafter.hidden_problem()
        if problem is None:
            return drafter
    else:
        problem = "only the neural chain drafter TransformersDraft can"
    raise ValueError(f"{type(drafter).__name__} cannot return its hidden states ({problem})")


def propose_block(
    drafter: DraftBackend,
    context: Sequence[int],
    gamma: int,
    temperature: float,
    rng: np.random.Generator,
    stop: DraftStopPolicy | None = None,
    shaping: DraftShaping | None = None,
) -> DraftProposal:
    """``drafter``'s block after ``context``: :meth:`DraftBackend.propose` without ``stop``
    (unchanged), :meth:`StoppingDraftBackend.propose_until_stop` with it."""
    if stop is None:
        return drafter.propose(context, gamma, temperature, rng, shaping)
    return stopping_drafter(drafter).propose_until_stop(
        context, gamma, temperature, rng, stop, shaping
    )


def stopping_drafter(drafter: DraftBackend) -> StoppingDraftBackend:
    """``drafter`` as a :class:`StoppingDraftBackend`; ``ValueError`` naming it when it is not
    one (prompt lookup, feature and token-tree drafts cannot stop token by token)."""
    if isinstance(drafter, StoppingDraftBackend):
        problem = drafter.stop_problem()
        if problem is None:
            return drafter
    else:
        problem = "only the neural chain drafters TransformersDraft and HybridDraft can"
    raise ValueError(f"{type(drafter).__name__} cannot draft with a stop predictor ({problem})")


@runtime_checkable
class FeatureDraftBackend(DraftBackend, Protocol):
    """A drafter that drafts from the target's hidden states (an EAGLE-style feature draft).

    When ``wants_target_hidden`` is true, the drafter loop opens its session with
    ``return_hidden`` and, after every verification, calls :meth:`observe_target_hidden`
    with the rows the verifier returned, before the next :meth:`propose`.
    """

    @property
    def wants_target_hidden(self) -> bool: ...

    def observe_target_hidden(self, start_pos: int, rows: npt.NDArray[np.float32]) -> None:
        """``rows`` are the target's last-layer hidden states of the committed positions
        ``start_pos .. start_pos + len(rows) - 1`` of the sequence prompt + output (the
        newest committed token has none yet: it is forwarded next round). The drafter loop
        calls this after every verification; a drafter uses them to draft the next round.
        Rows may repeat positions already observed (after a re-prefill they restart at 0)."""
        ...


def common_prefix_length(cached: Sequence[int], context: Sequence[int]) -> int:
    """How many leading tokens ``cached`` (the tokens a drafter's cache was built from) and
    ``context`` share: the longest common prefix a draft cache is cropped back to."""
    limit = min(len(cached), len(context))
    common = 0
    while common < limit and cached[common] == context[common]:
        common += 1
    return common
