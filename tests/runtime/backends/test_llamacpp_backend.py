"""The llama.cpp target and draft backends on a tiny GGUF model written here: the load-time
self-check, KV sequences (crop, staleness, exhaustion, release), refusals, hidden states."""

from __future__ import annotations

import gc
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.runtime.backends.llamacpp_fixtures import SKIP_REASON, VOCAB, tiny_gguf

pytest.importorskip("llama_cpp", reason=SKIP_REASON)
pytest.importorskip("gguf", reason="the tiny test model is written with the gguf package")

from edgespec.errors import UserInputError
from edgespec.models.registry import ModelNotFoundError, model_file
from edgespec.runtime.backends import llamacpp_backend
from edgespec.runtime.backends.base import ForwardItem, ForwardOutput
from edgespec.runtime.backends.exactness import (
    InexactBackendError,
    Inexactness,
    exactness_problem,
)
from edgespec.runtime.backends.llamacpp_backend import (
    TREE_HIDDEN,
    LlamaCppTarget,
    SequencesExhaustedError,
)
from edgespec.runtime.backends.llamacpp_context import (
    TILED_MM_ENV,
    LlamaContext,
    LlamaCppSettings,
    import_llama_cpp,
)
from edgespec.runtime.backends.llamacpp_draft import LlamaCppDraft
from edgespec.runtime.backends.logit_rows import HostRows


def _target(sequences: int = 4, exact: bool = True) -> LlamaCppTarget:
    return LlamaCppTarget(LlamaCppSettings(tiny_gguf(0), sequences, 256, threads=1, exact=exact))


@pytest.fixture(scope="module")
def target() -> LlamaCppTarget:
    return _target()


def test_the_exact_configuration_passes_its_own_self_check(target: LlamaCppTarget) -> None:
    assert target.inexactness is None
    assert (target.vocab_size, target.eos_token_ids, target.max_context_tokens) == (
        VOCAB,
        frozenset({2}),
        256,
    )
    assert (
        exactness_problem(target, max_rows=4) is None
    )  # again, on sequences the first one released
    assert TILED_MM_ENV not in os.environ  # set for ggml's first product only, then put back


class _Skewed:
    """A target whose batched passes are off by ``delta`` on one logit."""

    def __init__(self, inner: LlamaCppTarget, delta: float) -> None:
        self.inner, self.delta = inner, delta
        self.vocab_size = inner.vocab_size

    def forward(self, items: list[ForwardItem]) -> list[ForwardOutput]:
        outs = self.inner.forward(items)
        if len(items) == 1 and len(items[0].new_token_ids) == 1:
            return outs
        return [ForwardOutput(HostRows(o.logits + self._bump(o.logits)), o.kv) for o in outs]

    def _bump(self, logits: np.ndarray) -> np.ndarray:
        bump = np.zeros_like(logits)
        bump[:, 0] = self.delta
        return bump

    def crop(self, kv: Any, num_tokens: int) -> Any:
        return self.inner.crop(kv, num_tokens)


def test_the_self_check_names_a_difference_and_its_argmax_flips(target: LlamaCppTarget) -> None:
    problem = exactness_problem(_Skewed(target, 1e-6))  # type: ignore[arg-type]
    assert problem is not None
    assert re.fullmatch(
        r"a cold block: max \|Δlogit\| 1(\.0\d*)?e-06 .*, 0 of 2 argmax flips", str(problem)
    )
    flipped = exactness_problem(_Skewed(target, 1e3))  # type: ignore[arg-type]
    assert flipped is not None and "2 of 2 argmax flips" in str(flipped)


def test_an_inexact_backend_is_refused_unless_lossy_by_name(monkeypatch: Any) -> None:
    off = Inexactness("a cold block", 0.5, 1, 2)
    monkeypatch.setattr(llamacpp_backend, "exactness_problem", lambda t, max_rows: off)
    with pytest.raises(
        InexactBackendError,
        match=r"a cold block: max \|Δlogit\| 0.5 .*, 1 of 2 argmax flips.*llamacpp-lossy",
    ):
        _target()
    lossy = _target(exact=False)
    assert lossy.inexactness == off


def test_a_tiled_matmul_switched_on_is_refused(monkeypatch: Any) -> None:
    monkeypatch.setenv(TILED_MM_ENV, "1")
    with pytest.raises(UserInputError, match="GGML_CPU_TILED_MM=1"):  # serve: one line, exit 2
        import_llama_cpp(exact=True)


def test_crop_trims_in_place_and_the_old_state_goes_stale(target: LlamaCppTarget) -> None:
    seq = (1, 5, 9, 13, 17, 21)
    full = target.forward([ForwardItem(None, 0, seq, 3)])[0]
    cropped = target.crop(full.kv, 4)
    assert target.kv_bytes(cropped) == 4 * target.bytes_per_token > 0
    with pytest.raises(ValueError, match="stale KV state"):
        target.forward([ForwardItem(full.kv, 6, (3,), 1)])
    again = target.forward([ForwardItem(cropped, 4, seq[4:], 2)])[0]
    assert np.array_equal(again.logits, full.logits[1:])
    with pytest.raises(ValueError, match="cannot crop a 6-token KV state to 7"):
        target.crop(again.kv, 7)
    prefix = target.gather(again.kv, [0, 1, 2])
    assert prefix.length == prefix.slot.length == 3
    with pytest.raises(ValueError, match="no prefix of a chain's KV state"):
        target.gather(prefix, [0, 2])


def _alone(target: LlamaCppTarget, tokens: tuple[int, ...]) -> np.ndarray:
    row: np.ndarray = target.forward([ForwardItem(None, 0, tokens, 1)])[0].logits[0]
    return row


def test_a_token_tree_gives_each_node_its_own_paths_logits(target: LlamaCppTarget) -> None:
    """Context (5, 6) on a cached (1, 2, 3); nodes 0 and 1 hang off 6, 2 off 0, 3 off 2,
    4 off 1: each node's row equals its root path decoded as a chain."""
    cached = target.forward([ForwardItem(None, 0, (1, 2, 3), 1)])[0]
    tokens, parents = (11, 12, 13, 14, 15), (-1, -1, 0, 2, 1)
    pair = target.forward(
        [ForwardItem(cached.kv, 3, (5, 6, *tokens), 6, tree_parents=parents),
         ForwardItem(None, 0, (9, 8, 7), 2)]
    )  # fmt: skip
    paths = [(), (11,), (12,), (11, 13), (11, 13, 14), (12, 15)]  # the context's row first
    for row, path in enumerate(paths):
        assert np.array_equal(pair[0].logits[row], _alone(target, (1, 2, 3, 5, 6, *path)))
    assert np.array_equal(pair[1].logits[1], _alone(target, (9, 8, 7)))
    kept = target.gather(pair[0].kv, [0, 1, 2, 3, 4, 5, 7])  # prefix + nodes 0, 2
    assert kept.length == kept.slot.length == 7
    after = target.forward([ForwardItem(kept, 7, (14,), 1)])[0]
    assert np.array_equal(after.logits[0], _alone(target, (1, 2, 3, 5, 6, 11, 13, 14)))
    with pytest.raises(ValueError, match="must be gathered"):
        target.forward([ForwardItem(pair[0].kv, 10, (3,), 1)])


def test_bad_trees_and_overlong_items_are_refused(target: LlamaCppTarget) -> None:
    with pytest.raises(ValueError, match=re.escape(TREE_HIDDEN)):
        target.forward([ForwardItem(None, 0, (1, 2, 3), 2, True, tree_parents=(-1, -1))])
    tree = target.forward([ForwardItem(None, 0, (1, 2, 3), 3, tree_parents=(-1, -1))])[0]
    with pytest.raises(ValueError, match="no path from the tree's root"):
        target.gather(tree.kv, [0, 1, 2])  # the prefix (1,), then siblings 0 and 1
    with pytest.raises(ValueError, match="257 tokens exceed the llama.cpp sequence length 256"):
        target.forward([ForwardItem(None, 0, (1,) * 257, 1)])


def test_sequences_run_out_and_come_back_when_states_are_dropped() -> None:
    small = _target(sequences=2)
    held = [small.forward([ForwardItem(None, 0, (1, 2), 1)])[0] for _ in range(2)]
    with pytest.raises(SequencesExhaustedError, match="all 2 llama.cpp sequences"):
        small.forward([ForwardItem(None, 0, (3,), 1)])
    kept = held.pop()
    del held
    gc.collect()
    again = small.forward([ForwardItem(None, 0, (1, 2), 1)])[0]
    assert np.array_equal(again.logits, kept.logits)  # a cleared sequence, reused


def test_hidden_states_of_every_new_token_batched_as_alone(target: LlamaCppTarget) -> None:
    seq = (1, 7, 11, 19, 23)
    alone = target.forward([ForwardItem(None, 0, seq, 2, want_hidden=True)])[0]
    assert alone.hidden is not None and alone.hidden.shape == (5, target.hidden_size)
    pair = target.forward(
        [ForwardItem(None, 0, (4, 4, 4), 1), ForwardItem(None, 0, seq, 2, want_hidden=True)]
    )
    assert pair[0].hidden is None and pair[0].logits.shape == (1, VOCAB)
    assert pair[1].hidden is not None and np.array_equal(pair[1].hidden, alone.hidden)
    assert np.array_equal(pair[1].logits, alone.logits)


def test_gpu_layers_on_a_cpu_build_stay_on_the_cpu_and_pass_the_self_check() -> None:
    """The GPU path on this CPU-only build: layers asked for a GPU stay on the CPU, and the
    self-check (which judges whatever device runs them) still passes."""
    settings = LlamaCppSettings(tiny_gguf(0), 2, 128, threads=1, gpu_layers=99)
    assert LlamaCppTarget(settings).inexactness is None


def test_settings_and_model_names_are_checked(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="sequences must be >= 1"):
        LlamaCppSettings(tiny_gguf(0), sequences=0)
    with pytest.raises(ModelNotFoundError, match=r"\.gguf.*does not exist"):
        model_file(str(tmp_path / "missing.gguf"))
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text("{}")
    with pytest.raises(ModelNotFoundError, match="loads GGUF models.*hf-directory"):
        model_file(str(tmp_path / "hf"))
    assert model_file(str(tiny_gguf(0))) == tiny_gguf(0)


def test_the_drafter_trims_to_the_common_prefix_and_matches_the_target(
    target: LlamaCppTarget,
) -> None:
    drafter = LlamaCppDraft(LlamaCppSettings(tiny_gguf(0), 1, 256, threads=1), VOCAB)
    rng = np.random.default_rng(0)
    context = [1, 9, 17, 33]
    block = drafter.propose(context, 4, 0.0, rng).token_ids
    greedy, seq = [], list(context)
    for _ in range(4):  # the target is the same model: its greedy chain is the draft's
        token = int(np.argmax(target.forward([ForwardItem(None, 0, tuple(seq), 1)])[0].logits))
        greedy.append(token)
        seq.append(token)
    assert block == tuple(greedy)
    other = drafter.propose([1, 9, 5], 3, 0.0, rng).token_ids  # diverges at token 2
    fresh = LlamaCppDraft(LlamaCppSettings(tiny_gguf(0), 1, 256, threads=1), VOCAB)
    assert other == fresh.propose([1, 9, 5], 3, 0.0, rng).token_ids
    sampled = drafter.propose(context, 3, 0.8, np.random.default_rng(1))
    assert sampled.probs is not None and sampled.probs.shape == (3, VOCAB)
    assert np.allclose(sampled.probs.sum(axis=1), 1.0, atol=1e-5)
    long_context = [1 + i % 50 for i in range(300)]  # past the drafter's 256 cells
    wide = LlamaCppDraft(LlamaCppSettings(tiny_gguf(0), 1, 512, threads=1), VOCAB)
    grown = drafter.propose(long_context, 4, 0.0, rng).token_ids
    assert grown == wide.propose(long_context, 4, 0.0, rng).token_ids
    with pytest.raises(ValueError, match="wider than the target's"):
        LlamaCppDraft(LlamaCppSettings(tiny_gguf(0), 1, 256), vocab_size=VOCAB - 1)


def test_the_drafters_context_grows_as_its_session_does_up_to_the_trained_one() -> None:
    """A session past the drafter's context grew it (it raised mid-output past 4,096 tokens
    whatever the server's context): the same drafts as a drafter that held it all along, in
    the session's own steps, the cells its last drafted token would take not counted; past
    the model's trained context (the tiny model's: 512) a call says so."""
    rng = np.random.default_rng(0)
    small = LlamaCppDraft(LlamaCppSettings(tiny_gguf(0), 1, 256, threads=1), VOCAB)
    wide = LlamaCppDraft(LlamaCppSettings(tiny_gguf(0), 1, 512, threads=1), VOCAB)
    session = [1 + i % 50 for i in range(250)]
    for _ in range(4):  # 250, 254, 258 (grown here), 262 tokens
        block = small.propose(session, 4, 0.0, rng).token_ids
        assert block == wide.propose(session, 4, 0.0, rng).token_ids
        session += block
    assert small._ctx.context_tokens == 512  # twice 256: at most the trained 512
    assert small.propose([1] * 509, 4, 0.0, rng).token_ids  # 512 cells: 509 + 3 decoded
    with pytest.raises(ValueError) as info:
        small.propose([1] * 510, 4, 0.0, rng)
    assert str(info.value) == (
        "510 context + 4 draft tokens are past the llama.cpp draft's trained context of 512 tokens"
    )


def test_a_closed_context_refuses_every_call() -> None:
    """A trim or a size read on a closed context crashed the process (segfault)."""
    context = LlamaContext(LlamaCppSettings(tiny_gguf(0), 1, 256, threads=1))
    context.close()
    for call in (lambda: context.trim(0, 0), lambda: context.sequence_bytes(0),
                 lambda: context.decode([(1, 0, 0, True)])):  # fmt: skip
        with pytest.raises(RuntimeError, match="the llama.cpp context is closed"):
            call()


def test_with_lookup_a_sampled_block_proposes_looked_up_tokens_for_certain() -> None:
    """``lookup`` comes first when sampling too: a looked-up token's q is a point mass; a
    position lookup finds nothing for is drawn from the draft's distribution."""
    settings = LlamaCppSettings(tiny_gguf(0), 1, 256, threads=1)
    context = [1, 9, 17, 33, 9, 17]  # (9, 17) → 33, (17, 33) → 9, (33, 9) → 17
    greedy = LlamaCppDraft(settings, VOCAB, lookup=True).propose(
        context, 3, 0.0, np.random.default_rng(0)
    )
    sampled = LlamaCppDraft(settings, VOCAB, lookup=True).propose(
        context, 3, 0.8, np.random.default_rng(1)
    )
    assert sampled.token_ids == greedy.token_ids == (33, 9, 17)
    assert greedy.probs is None and sampled.probs is not None
    np.testing.assert_array_equal(sampled.probs, np.eye(VOCAB, dtype=np.float32)[[33, 9, 17]])
    drawn = LlamaCppDraft(settings, VOCAB, lookup=True).propose(
        [1, 9, 17], 1, 0.8, np.random.default_rng(2)
    )
    assert drawn.probs is not None and np.count_nonzero(drawn.probs[0]) > 1  # nothing found


@pytest.mark.slow
def test_gemmas_hidden_states_on_llamacpp_are_the_final_norms_output() -> None:
    """llama.cpp's embeddings of Gemma 3 270M against transformers' last hidden state (after
    the final norm) of the same GGUF dequantized: the same vectors up to quantized
    activations (cosine > 0.99), the same greedy tokens."""
    from edgespec.models.loading import load_model
    from edgespec.runtime.backends.transformers_backend import TransformersTarget

    tokens = (2, 818, 5279, 529, 7001, 563, 496, 236743, 236778, 236770)
    ours = LlamaCppTarget(LlamaCppSettings(model_file("gemma3-270m"), 2, 512, threads=1))
    theirs = TransformersTarget(load_model("gemma3-270m").model)
    a = ours.forward([ForwardItem(None, 0, tokens, 3, want_hidden=True)])[0]
    b = theirs.forward([ForwardItem(None, 0, tokens, 3, want_hidden=True)])[0]
    assert a.hidden is not None and b.hidden is not None
    cosine = (a.hidden * b.hidden).sum(1) / np.linalg.norm(a.hidden, axis=1)
    cosine /= np.linalg.norm(b.hidden, axis=1)
    assert cosine.min() > 0.99, cosine
    assert np.array_equal(a.logits.argmax(1), b.logits.argmax(1))


def test_a_context_past_the_trained_one_is_refused_before_its_memory() -> None:
    """The tiny model is trained on 512 tokens: 1,024 a sequence is refused as the model
    loads, before llama.cpp allocates the context's KV memory (sequences × context, all at
    once: 100,000,000 took 23 GiB and the process was killed)."""
    with pytest.raises(UserInputError) as error:
        LlamaCppTarget(LlamaCppSettings(tiny_gguf(0), 2, 1024, threads=1))
    assert str(error.value) == (
        "--llamacpp-context 1024 is past the model's trained context, 512 tokens: give at most 512"
    )
    assert (
        LlamaCppTarget(LlamaCppSettings(tiny_gguf(0), 2, 512, threads=1)).max_context_tokens >= 512
    )


def test_gpu_layers_on_a_build_without_a_gpu_are_said_to_stay_on_the_cpu() -> None:
    import llama_cpp

    if llama_cpp.llama_supports_gpu_offload():
        pytest.skip("this llama.cpp build offloads to a GPU")
    target = LlamaCppTarget(LlamaCppSettings(tiny_gguf(0), 2, 256, threads=1, gpu_layers=5))
    assert target.gpu_note == (
        "--llamacpp-gpu-layers 5: this llama.cpp build has no GPU, so every layer runs on the "
        "CPU (DEPLOY.md: a wheel built for one)"
    )  # was said nowhere
    assert LlamaCppTarget(LlamaCppSettings(tiny_gguf(0), 2, 256, threads=1)).gpu_note == ""


def test_serving_says_the_context_llama_cpp_rounds_to_and_the_gpu_layers_it_ignores() -> None:
    """64 tokens a sequence: llama.cpp makes 256 (Health's max_context_tokens), which the
    start now says; GPU layers on a CPU build are said to stay on the CPU."""
    from types import SimpleNamespace

    from edgespec.runtime.commands.serve_target import TargetChoice, load_target

    said: list[str] = []
    settings = LlamaCppSettings(tiny_gguf(0), 2, 64, threads=1, gpu_layers=3)
    loaded = load_target(TargetChoice("llamacpp", settings), SimpleNamespace(target="tiny"),
                         False, said.append)  # fmt: skip
    assert loaded.backend.max_context_tokens == 256
    assert said[1] == "llama.cpp rounds each sequence up to 256 tokens"
    note = loaded.backend.gpu_note  # a CPU build's: every layer stays on the CPU
    assert said[2:] == ([note] if note else []) and (not note or "has no GPU" in note)
