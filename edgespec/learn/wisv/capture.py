"""WISV's Stage-1 dataset (seed 003): greedy mismatches of a real draft/target pair with
both models' hidden states and a "critical" base label, from GSM8K, CNN/DailyMail or
ShareGPT train prompts.

Per prompt (:func:`capture_prompt`):

1. **Reference.** The target decodes greedily on its own KV cache until the outcome is
   final (:class:`Outcome`: for GSM8K, :mod:`edgespec.learn.wisv.answers`), EOS or
   ``max_new_tokens``. This is the output O (n tokens) and its answer. Each step keeps
   the target's last-layer hidden state, after the final norm, at the input position
   whose logits predict the next token. So row j of ``H_t`` belongs to output token j.
2. **Draft.** One forward of the draft over prompt + O[:n−1] gives its argmax and
   post-norm hidden state at every position predicting O[j] on the target's prefix.
3. **Mismatches.** Greedy speculative decoding at window γ is lossless: its committed
   tokens are O. Each round starts on the target's prefix and drafts γ tokens (at most
   n − start − 1: the last output token is a plain target step, as in both hosts). Its
   first disagreement is a mismatch (:func:`greedy_rounds`), and that round's draft
   prefix is O's. So each mismatch's states are exactly those of steps 1–2, with no
   separate speculative loop. Disagreements after a round's first mismatch sit on the
   draft's own (rejected) token. Lossless SD never reaches them, and they are not
   captured. (Under WISV, an accepted mismatch leads to such positions. The head sees
   them only at inference.)
4. **Base label.** For the mismatch at output position j, the draft's token d_j is
   accepted: output O[:j] + d_j, then target-only greedy decoding under the same stopping
   rules, up to ``max_new_tokens`` in all. With an :class:`Outcome` (GSM8K) the mismatch
   is critical (y = 1) when the final answer differs from the reference's. With a
   :class:`~edgespec.learn.wisv.similarity.ContinuationSimilarity` (free text: CNN/DM,
   ShareGPT) the reference runs to EOS or ``max_new_tokens``, each continuation stops W
   tokens after j, and the mismatch is critical when the ROUGE-L F1 of the two W-token
   windows from j is below the threshold (that module's docstring states W, the threshold
   and why). All of a prompt's continuations run as one left-padded batch that reuses the
   reference's KV cache (the prefix O[:j] is shared). A finished row leaves the batch.
   Masks and position ids are built from true token positions
   (:func:`~edgespec.runtime.backends.attention_mask.batch_attention`, sliding windows
   included), as the runtime's target backend builds them.

"Critical" is relative to the target's own output: the shared prompt files hold no
reference solutions or summaries, and the question is whether accepting changes what the
target alone would produce.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import torch
from transformers import DynamicCache

from edgespec.learn.wisv.answers import answer_finished, extract_answer
from edgespec.learn.wisv.similarity import ContinuationSimilarity
from edgespec.models.trimmed import TrimmedVocabDraft
from edgespec.policies.semantic.relabel import Episode
from edgespec.runtime.backends.attention_mask import AttentionLayout, batch_attention
from edgespec.runtime.backends.base import ForwardItem
from edgespec.runtime.backends.lm_head import BLOCKED_HEAD_MAX_ROWS, blocked_head, plain_head
from edgespec.runtime.backends.transformers_backend import eos_ids

Layers = tuple[tuple[torch.Tensor, torch.Tensor], ...]
"""Per-layer (keys, values), each [1, kv_heads, length, head_dim]: one sequence's cache."""
FloatArray = npt.NDArray[np.float32]


class Stopping(Protocol):
    """When an output (its token ids) is final, besides EOS and ``max_new_tokens``."""

    def finished(self, output_ids: Sequence[int]) -> bool: ...


class Outcome(Stopping, Protocol):
    """The task outcome of an output (its token ids): when it is final, and what it is."""

    def answer(self, output_ids: Sequence[int]) -> str | None: ...


Criterion = Outcome | ContinuationSimilarity
"""A base label: an answer to compare (GSM8K) or the continuation similarity (free text)."""


@dataclass(frozen=True, slots=True)
class TextOutcome:
    """GSM8K's outcome on decoded text (:mod:`edgespec.learn.wisv.answers`)."""

    tokenizer: Any

    def _text(self, output_ids: Sequence[int]) -> str:
        return str(self.tokenizer.decode(list(output_ids), skip_special_tokens=True))

    def finished(self, output_ids: Sequence[int]) -> bool:
        return answer_finished(self._text(output_ids))

    def answer(self, output_ids: Sequence[int]) -> str | None:
        return extract_answer(self._text(output_ids))


@dataclass(frozen=True, slots=True)
class CaptureSettings:
    gamma: int = 8
    max_new_tokens: int = 128

    def __post_init__(self) -> None:
        if self.gamma < 1 or self.max_new_tokens < 1:
            raise ValueError("gamma and max_new_tokens must be >= 1")


@dataclass(frozen=True, slots=True)
class RoundMismatch:
    """A round's first disagreement: output position, round index, offset in the block."""

    position: int
    round: int
    offset: int


def greedy_rounds(flags: Sequence[bool], gamma: int) -> tuple[list[RoundMismatch], int]:
    """(the rounds' first mismatches, the number of rounds) of greedy SD at window
    ``gamma`` over an output whose per-position draft agreement is ``flags`` (module
    docstring, step 3; the same replay as :func:`edgespec.learn.stop.data.window_rows`)."""
    if gamma < 1:
        raise ValueError(f"gamma must be >= 1, got {gamma}")
    n = len(flags)
    found: list[RoundMismatch] = []
    start = rounds = 0
    while start < n:
        block = min(gamma, n - start - 1)
        accepted = 0
        while accepted < block and flags[start + accepted]:
            accepted += 1
        if accepted < block:
            found.append(RoundMismatch(start + accepted, rounds, accepted))
        start += accepted + 1
        rounds += 1
    return found, rounds


def _argmax(model: Any, hidden: torch.Tensor) -> list[int]:
    """The target's greedy token for each row of ``hidden`` (R × d): its own head (a
    logit soft-cap is monotone and leaves the argmax alone), in vocabulary blocks for
    2..48 rows as the runtime's backend does."""
    weight = plain_head(model)
    if weight is not None and 1 < hidden.shape[0] <= BLOCKED_HEAD_MAX_ROWS:
        logits = blocked_head(hidden, weight)
    else:
        logits = model.lm_head(hidden)
    return [int(t) for t in logits.argmax(dim=-1).tolist()]


def _forward(
    model: Any,
    layout: AttentionLayout,
    cache: DynamicCache,
    width: int,
    kv_lens: Sequence[int],
    tokens: Sequence[Sequence[int]],
) -> torch.Tensor:
    """The target's post-norm hidden states [B, N, d] for each row's new ``tokens`` (equal
    lengths) on a cache ``width`` columns wide holding row b's ``kv_lens[b]`` tokens
    right-aligned; the cache grows by N columns."""
    new = len(tokens[0])
    items = [
        ForwardItem(None, kv_len, tuple(t), 1) for kv_len, t in zip(kv_lens, tokens, strict=True)
    ]
    dtype = next(model.parameters()).dtype
    device = next(model.parameters()).device
    mask, positions = batch_attention(items, width, new, layout, dtype, device)
    ids = torch.tensor([list(t) for t in tokens], dtype=torch.long, device=device)
    out = model.model(
        input_ids=ids,
        attention_mask=mask,
        position_ids=positions,
        past_key_values=cache,
        use_cache=True,
    )
    hidden: torch.Tensor = out.last_hidden_state
    return hidden


def _layers(cache: DynamicCache) -> Layers:
    layers: Any = cache.layers
    return tuple((layer.keys, layer.values) for layer in layers)


@dataclass(frozen=True, slots=True, eq=False)
class Reference:
    """The target-only output, its hidden rows (row j predicts token j) and its cache
    (covering prompt + output[:-1])."""

    output: tuple[int, ...]
    hidden: FloatArray
    layers: Layers


@torch.inference_mode()
def target_reference(
    model: Any,
    layout: AttentionLayout,
    prompt_ids: Sequence[int],
    max_new_tokens: int,
    eos: frozenset[int],
    outcome: Stopping,
) -> Reference:
    """Step 1 of the module docstring."""
    cache = DynamicCache()
    hidden = _forward(model, layout, cache, 0, [0], [list(prompt_ids)])
    rows = [hidden[0, -1]]
    output: list[int] = []
    while True:
        token = _argmax(model, rows[-1][None])[0]
        output.append(token)
        if token in eos or len(output) >= max_new_tokens or outcome.finished(output):
            break
        kv_len = len(prompt_ids) + len(output) - 1
        rows.append(_forward(model, layout, cache, kv_len, [kv_len], [[token]])[0, -1])
    states = torch.stack(rows).float().cpu().numpy()
    return Reference(tuple(output), states, _layers(cache))


@torch.inference_mode()
def draft_states(model: Any, token_ids: Sequence[int]) -> tuple[list[int], FloatArray]:
    """The draft's greedy token and post-norm hidden state at every position of
    ``token_ids`` (one forward; row i predicts token i + 1). A trimmed-vocabulary draft
    answers in target ids."""
    ids = torch.tensor([list(token_ids)], dtype=torch.long)
    if isinstance(model, TrimmedVocabDraft):
        hidden = model.model(input_ids=model.to_draft_ids(ids)).last_hidden_state[0]
        weight = model.model.embed_tokens.weight[: model.num_kept]
        greedy = model.to_target_ids((hidden @ weight.T).argmax(dim=-1))
    else:
        hidden = model.model(input_ids=ids).last_hidden_state[0]
        greedy = model.lm_head(hidden).argmax(dim=-1)
    return [int(t) for t in greedy.tolist()], hidden.float().cpu().numpy()


@dataclass(slots=True)
class _Row:
    index: int
    prefix_len: int
    limit: int
    output: list[int]


def _select(cache: DynamicCache, keep: Sequence[int]) -> DynamicCache:
    index = torch.tensor(list(keep), dtype=torch.long)
    data = [(k.index_select(0, index), v.index_select(0, index)) for k, v in _layers(cache)]
    return DynamicCache(ddp_cache_data=data)


@torch.inference_mode()
def continue_greedy(
    model: Any,
    layout: AttentionLayout,
    reference: Reference,
    prompt_len: int,
    starts: Sequence[tuple[int, int]],
    max_new_tokens: int,
    eos: frozenset[int],
    outcome: Stopping,
    window: int | None = None,
) -> tuple[list[tuple[int, ...]], int]:
    """(the output of each (j, d) in ``starts`` — O[:j] + d, then target-only greedy
    decoding until the outcome is final, EOS, ``max_new_tokens`` or, with ``window``,
    j + ``window`` tokens —, the continuation tokens decoded). One left-padded batch on
    the reference's cache (step 4)."""
    ref = reference.output
    if window is not None and window < 1:
        raise ValueError(f"window must be >= 1, got {window}")

    def done(r: _Row) -> bool:
        out = r.output
        return out[-1] in eos or len(out) >= r.limit or outcome.finished(out)

    def limit(j: int) -> int:
        return max_new_tokens if window is None else min(max_new_tokens, j + window)

    rows = [_Row(i, prompt_len + j, limit(j), [*ref[:j], d]) for i, (j, d) in enumerate(starts)]
    if any(not 0 <= j < len(ref) for j, _ in starts):
        raise ValueError("a continuation starts outside the reference output")
    active = [r for r in rows if not done(r)]
    decoded = 0
    if active:
        width = max(r.prefix_len for r in active)
        data = []
        for k, v in reference.layers:
            keys = k.new_zeros((len(active), k.shape[1], width, k.shape[3]))
            values = v.new_zeros((len(active), v.shape[1], width, v.shape[3]))
            for b, r in enumerate(active):
                keys[b, :, width - r.prefix_len :] = k[0, :, : r.prefix_len]
                values[b, :, width - r.prefix_len :] = v[0, :, : r.prefix_len]
            data.append((keys, values))
        cache = DynamicCache(ddp_cache_data=data)
        step = 0
        while active:
            kv_lens = [r.prefix_len + step for r in active]
            hidden = _forward(
                model, layout, cache, width + step, kv_lens, [[r.output[-1]] for r in active]
            )
            step += 1
            for r, token in zip(active, _argmax(model, hidden[:, -1]), strict=True):
                r.output.append(token)
            decoded += len(active)
            keep = [b for b, r in enumerate(active) if not done(r)]
            if len(keep) < len(active):
                active = [active[b] for b in keep]
                if active:
                    cache = _select(cache, keep)
    return [tuple(r.output) for r in rows], decoded


@dataclass(frozen=True, slots=True, eq=False)
class PromptCapture:
    """One prompt's mismatches (arrays in output order) and its bookkeeping."""

    prompt_index: int
    prompt_tokens: int
    output: tuple[int, ...]
    answer: str | None
    mismatches: tuple[RoundMismatch, ...]
    draft_ids: tuple[int, ...]
    target_ids: tuple[int, ...]
    draft_hidden: FloatArray
    target_hidden: FloatArray
    continuation_answers: tuple[str | None, ...]
    critical: tuple[int, ...]
    num_rounds: int
    agreement: float
    continuation_tokens: int
    seconds: dict[str, float] = field(default_factory=dict)
    similarity: tuple[float, ...] | None = None
    """Each mismatch's ROUGE-L F1 under a continuation-similarity criterion, else None."""


@dataclass(frozen=True, slots=True)
class BaseLabels:
    """The reference's answer, each continuation's answer, each mismatch's label and,
    under a continuation-similarity criterion, each one's ROUGE-L F1 (answers ``None``)."""

    answer: str | None
    continuation_answers: tuple[str | None, ...]
    critical: tuple[int, ...]
    similarity: tuple[float, ...] | None


def base_labels(
    outcome: Criterion,
    reference: Sequence[int],
    outputs: Sequence[Sequence[int]],
    positions: Sequence[int],
) -> BaseLabels:
    """Step 4's labels of the continuations ``outputs`` of the mismatches at ``positions``
    against the target-only output ``reference``."""
    if isinstance(outcome, ContinuationSimilarity):
        scores = tuple(
            outcome.similarity(reference, o, j) for o, j in zip(outputs, positions, strict=True)
        )
        critical = tuple(int(outcome.critical(s)) for s in scores)
        return BaseLabels(None, (None,) * len(outputs), critical, scores)
    answer = outcome.answer(reference)
    answers = tuple(outcome.answer(o) for o in outputs)
    return BaseLabels(answer, answers, tuple(int(a != answer) for a in answers), None)


def capture_prompt(
    target: Any,
    draft: Any,
    layout: AttentionLayout,
    prompt_ids: Sequence[int],
    prompt_index: int,
    settings: CaptureSettings,
    outcome: Criterion,
    eos: frozenset[int] | None = None,
) -> PromptCapture:
    """Steps 1–4 of the module docstring for one prompt (``layout``: the target's
    :func:`~edgespec.runtime.backends.attention_mask.attention_layout`). A
    :class:`~edgespec.learn.wisv.similarity.ContinuationSimilarity` gives no answers
    (``None``) and fills :attr:`PromptCapture.similarity`."""
    eos = eos_ids(target) if eos is None else eos
    clock = time.perf_counter()
    ref = target_reference(target, layout, prompt_ids, settings.max_new_tokens, eos, outcome)
    seconds = {"reference": time.perf_counter() - clock}
    clock = time.perf_counter()
    n = len(ref.output)
    greedy, draft_rows = draft_states(draft, [*prompt_ids, *ref.output[:-1]])
    start = len(prompt_ids) - 1
    greedy, draft_rows = greedy[start : start + n], draft_rows[start : start + n]
    flags = [g == t for g, t in zip(greedy, ref.output, strict=True)]
    found, rounds = greedy_rounds(flags, settings.gamma)
    seconds["draft"] = time.perf_counter() - clock
    clock = time.perf_counter()
    starts = [(m.position, greedy[m.position]) for m in found]
    at = [m.position for m in found]
    window = outcome.window if isinstance(outcome, ContinuationSimilarity) else None
    outputs, decoded = continue_greedy(
        target, layout, ref, len(prompt_ids), starts, settings.max_new_tokens, eos, outcome, window
    )
    labels = base_labels(outcome, ref.output, outputs, at)
    seconds["continuations"] = time.perf_counter() - clock
    return PromptCapture(
        prompt_index=prompt_index,
        prompt_tokens=len(prompt_ids),
        output=ref.output,
        answer=labels.answer,
        mismatches=tuple(found),
        draft_ids=tuple(greedy[p] for p in at),
        target_ids=tuple(ref.output[p] for p in at),
        draft_hidden=draft_rows[at].reshape(len(at), draft_rows.shape[1]),
        target_hidden=ref.hidden[at].reshape(len(at), ref.hidden.shape[1]),
        continuation_answers=labels.continuation_answers,
        critical=labels.critical,
        num_rounds=rounds,
        agreement=float(np.mean(flags)),
        continuation_tokens=decoded,
        seconds=seconds,
        similarity=labels.similarity,
    )


MISMATCH_KEYS = ("prompt_index", "position", "round", "offset", "draft_id", "target_id", "critical")
PROMPT_KEYS = ("prompts", "prompt_tokens", "output_tokens", "num_rounds", "agreement")


@dataclass(frozen=True, slots=True, eq=False)
class WisvDataset:
    """Mismatch rows (hidden states as float16 on disk) and per-prompt bookkeeping.

    Every mismatch key (:data:`MISMATCH_KEYS`) is an array of one entry per mismatch in
    prompt then output order; ``prompts`` lists the captured prompt indices (line numbers
    of the dataset's train file; for ShareGPT, the order of its train prompts) with
    :data:`PROMPT_KEYS`' other arrays aligned to it. Answers are strings, ``""`` for no
    number (and for every row of a similarity-labelled dataset). ``similarity`` holds each
    mismatch's ROUGE-L F1 when the labels come from
    :class:`~edgespec.learn.wisv.similarity.ContinuationSimilarity`; it is ``None`` (and
    not in the file) for answer labels."""

    draft_hidden: npt.NDArray[np.float16]
    target_hidden: npt.NDArray[np.float16]
    rows: dict[str, npt.NDArray[Any]]
    prompts: dict[str, npt.NDArray[Any]]
    continuation_answer: npt.NDArray[np.str_]
    reference_answer: npt.NDArray[np.str_]
    meta: dict[str, Any]
    similarity: npt.NDArray[np.float64] | None = None

    def __len__(self) -> int:
        return int(self.rows["critical"].shape[0])

    @staticmethod
    def from_captures(captures: Sequence[PromptCapture], meta: dict[str, Any]) -> WisvDataset:
        def cat(values: Callable[[PromptCapture], Sequence[Any]], dtype: Any) -> Any:
            return np.asarray([v for c in captures for v in values(c)], dtype=dtype)

        width_d = captures[0].draft_hidden.shape[1] if captures else 0
        width_t = captures[0].target_hidden.shape[1] if captures else 0
        rows: dict[str, npt.NDArray[Any]] = {
            "prompt_index": cat(lambda c: [c.prompt_index] * len(c.mismatches), np.int32),
            "position": cat(lambda c: [m.position for m in c.mismatches], np.int32),
            "round": cat(lambda c: [m.round for m in c.mismatches], np.int32),
            "offset": cat(lambda c: [m.offset for m in c.mismatches], np.int32),
            "draft_id": cat(lambda c: c.draft_ids, np.int64),
            "target_id": cat(lambda c: c.target_ids, np.int64),
            "critical": cat(lambda c: c.critical, np.int8),
        }
        prompts: dict[str, npt.NDArray[Any]] = {
            "prompts": np.asarray([c.prompt_index for c in captures], dtype=np.int32),
            "prompt_tokens": np.asarray([c.prompt_tokens for c in captures], dtype=np.int32),
            "output_tokens": np.asarray([len(c.output) for c in captures], dtype=np.int32),
            "num_rounds": np.asarray([c.num_rounds for c in captures], dtype=np.int32),
            "agreement": np.asarray([c.agreement for c in captures], dtype=np.float64),
        }
        similar = {c.similarity is not None for c in captures}
        if len(similar) > 1:
            raise ValueError("captures mix answer labels and similarity labels")
        similarity = cat(lambda c: c.similarity or (), np.float64) if similar == {True} else None
        hd = [c.draft_hidden for c in captures if len(c.mismatches)]
        ht = [c.target_hidden for c in captures if len(c.mismatches)]
        return WisvDataset(
            draft_hidden=(np.concatenate(hd) if hd else np.zeros((0, width_d))).astype(np.float16),
            target_hidden=(np.concatenate(ht) if ht else np.zeros((0, width_t))).astype(np.float16),
            rows=rows,
            prompts=prompts,
            continuation_answer=np.asarray(
                [a or "" for c in captures for a in c.continuation_answers], dtype=np.str_
            ).reshape(-1),
            reference_answer=np.asarray([c.answer or "" for c in captures], dtype=np.str_),
            meta=meta,
            similarity=similarity,
        )

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, Any] = {
            "draft_hidden": self.draft_hidden,
            "target_hidden": self.target_hidden,
            "continuation_answer": self.continuation_answer,
            "reference_answer": self.reference_answer,
            "meta": np.asarray(json.dumps(self.meta)),
            **self.rows,
            **self.prompts,
        }
        if self.similarity is not None:
            arrays["similarity"] = self.similarity
        with path.open("wb") as fh:
            np.savez_compressed(fh, **arrays)

    @staticmethod
    def load(path: Path) -> WisvDataset:
        with np.load(path, allow_pickle=False) as data:
            missing = [
                k
                for k in (*MISMATCH_KEYS, *PROMPT_KEYS, "draft_hidden", "target_hidden", "meta")
                if k not in data.files
            ]
            if missing:
                raise ValueError(f"{path}: not a wisv-data file (missing {', '.join(missing)})")
            return WisvDataset(
                draft_hidden=data["draft_hidden"],
                target_hidden=data["target_hidden"],
                rows={k: data[k] for k in MISMATCH_KEYS},
                prompts={k: data[k] for k in PROMPT_KEYS},
                continuation_answer=data["continuation_answer"],
                reference_answer=data["reference_answer"],
                meta=json.loads(str(data["meta"])),
                similarity=data["similarity"] if "similarity" in data.files else None,
            )

    def episodes(self) -> list[tuple[int, npt.NDArray[np.int64], Episode]]:
        """(prompt index, row indices, :class:`Episode`) for every prompt with mismatches,
        in prompt order."""
        found = []
        prompt = self.rows["prompt_index"]
        for p in self.prompts["prompts"]:
            idx = np.flatnonzero(prompt == p).astype(np.int64)
            if idx.size:
                positions = tuple(int(x) for x in self.rows["position"][idx])
                critical = tuple(int(x) for x in self.rows["critical"][idx])
                found.append((int(p), idx, Episode(positions, critical)))
        return found

    def summary(self) -> dict[str, Any]:
        """Counts for the JSON summary: prompts, mismatches, class balance, agreement; the
        answers found (answer labels) or the ROUGE-L F1's mean, median and histogram in
        ten bins of width 0.1, 1.0 in the last (similarity labels)."""
        critical = int(self.rows["critical"].sum())
        total = len(self)
        outputs = self.prompts["output_tokens"]
        with_critical = len(set(self.rows["prompt_index"][self.rows["critical"] == 1].tolist()))
        found: dict[str, Any] = {
            "prompts": int(self.prompts["prompts"].size),
            "mismatches": total,
            "critical": critical,
            "non_critical": total - critical,
            "critical_share": round(critical / total, 4) if total else 0.0,
            "prompts_with_mismatches": len(set(self.rows["prompt_index"].tolist())),
            "prompts_with_critical": with_critical,
            "mismatches_per_prompt": round(total / max(1, outputs.size), 3),
            "output_tokens": int(outputs.sum()),
            "mean_output_tokens": round(float(outputs.mean()), 2) if outputs.size else 0.0,
            "rounds": int(self.prompts["num_rounds"].sum()),
            "agreement": round(float(np.average(self.prompts["agreement"], weights=outputs)), 4)
            if outputs.size and outputs.sum()
            else 0.0,
            "answers_found": int((self.reference_answer != "").sum()),
            "draft_hidden": int(self.draft_hidden.shape[1]),
            "target_hidden": int(self.target_hidden.shape[1]),
        }
        if self.similarity is not None:
            del found["answers_found"]
            f1 = self.similarity
            found["similarity_mean"] = round(float(f1.mean()), 4) if f1.size else 0.0
            found["similarity_median"] = round(float(np.median(f1)), 4) if f1.size else 0.0
            bins = np.minimum(np.floor(f1 * 10 + 1e-9).astype(np.int64), 9)
            found["similarity_histogram"] = np.bincount(bins, minlength=10).tolist()
        return found
