"""A tiny GGUF model written in the test: llama architecture, random weights (Q8_0 matrices,
as a quantized model's kernels run), a 64-token SentencePiece-style vocabulary."""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

VOCAB = 64
EOS = 2
if TYPE_CHECKING:
    from edgespec.runtime.backends.llamacpp_context import Entry

SKIP_REASON = (
    "llama-cpp-python is not installed (`make` builds it once: tools/build_llamacpp_wheel.sh)"
)


def write_tiny_llama_gguf(
    path: Path,
    seed: int = 0,
    layers: int = 2,
    eot_token_id: int | None = None,
    control_tokens: dict[int, bytes] | None = None,
) -> Path:
    """Write the tiny model to ``path`` (n_embd 64, 4 heads of 16, 2 KV heads, FFN 128,
    context 512) and return it; ``eot_token_id``: declared as its end-of-turn token;
    ``control_tokens``: ids given these texts as control tokens."""
    gguf = pytest.importorskip("gguf")
    rng = np.random.default_rng(seed)
    embd, heads, kv_heads, ffn = 64, 4, 2, 128
    head = embd // heads
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("edgespec-tiny-llama")
    writer.add_context_length(512)
    writer.add_embedding_length(embd)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_dimension_count(head)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    writer.add_tokenizer_model("llama")
    tokens = [b"<unk>", b"<s>", b"</s>"] + [f"t{i}".encode() for i in range(3, VOCAB)]
    types = [2, 3, 3] + [1] * (VOCAB - 3)
    for token_id, text in (control_tokens or {}).items():
        tokens[token_id], types[token_id] = text, 3
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * 3 + [-float(i) for i in range(3, VOCAB)])
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(EOS)
    if eot_token_id is not None:
        writer.add_eot_token_id(eot_token_id)
    writer.add_unk_token_id(0)

    def matrix(name: str, rows: int, cols: int, scale: float, zero_rows: int = 0) -> None:
        data = (rng.standard_normal((rows, cols)) * scale).astype(np.float32)
        data[:zero_rows] = 0.0
        quantized = gguf.quants.quantize(data, gguf.GGMLQuantizationType.Q8_0)
        writer.add_tensor(name, quantized, raw_dtype=gguf.GGMLQuantizationType.Q8_0)

    def norm(name: str) -> None:
        writer.add_tensor(name, (1.0 + 0.1 * rng.standard_normal(embd)).astype(np.float32))

    matrix("token_embd.weight", VOCAB, embd, 1.0)
    for i in range(layers):
        norm(f"blk.{i}.attn_norm.weight")
        matrix(f"blk.{i}.attn_q.weight", heads * head, embd, embd**-0.5)
        matrix(f"blk.{i}.attn_k.weight", kv_heads * head, embd, embd**-0.5)
        matrix(f"blk.{i}.attn_v.weight", kv_heads * head, embd, embd**-0.5)
        matrix(f"blk.{i}.attn_output.weight", embd, heads * head, embd**-0.5)
        norm(f"blk.{i}.ffn_norm.weight")
        matrix(f"blk.{i}.ffn_gate.weight", ffn, embd, embd**-0.5)
        matrix(f"blk.{i}.ffn_up.weight", ffn, embd, embd**-0.5)
        matrix(f"blk.{i}.ffn_down.weight", embd, ffn, ffn**-0.5)
    norm("output_norm.weight")
    # the special tokens' logits are 0, below the best of 61 others: EOS is (almost) never
    # greedy, so outputs run to max_new_tokens
    matrix("output.weight", VOCAB, embd, 2.0 * embd**-0.5, zero_rows=3)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@functools.cache
def tiny_gguf(seed: int = 0) -> Path:
    """The tiny model of ``seed``, written once per test process."""
    directory = Path(tempfile.mkdtemp(prefix="edgespec-tiny-gguf-"))
    atexit.register(shutil.rmtree, directory, True)
    return write_tiny_llama_gguf(directory / f"tiny-llama-{seed}.gguf", seed)


def count_output_rows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The output rows (a vocabulary-wide logit row each) each ``llama_decode`` batch makes
    llama.cpp compute, appended per call: its tokens with a logits flag, or with embeddings
    on (``hidden``) every token (tests/runtime/backends/test_llamacpp_semantic_rows.py)."""
    from edgespec.runtime.backends.llamacpp_context import LlamaContext

    counts: list[int] = []
    decode = LlamaContext.decode

    def counting(self: LlamaContext, entries: Sequence[Entry], hidden: bool = False) -> Any:
        counts.append(len(entries) if hidden else sum(1 for *_, wanted in entries if wanted))
        return decode(self, entries, hidden)

    monkeypatch.setattr(LlamaContext, "decode", counting)
    return counts
