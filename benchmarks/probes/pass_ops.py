"""How many torch operations one verification pass dispatches, per layer and per pass, in
exact and lossy numerics: on a GPU each is at least one kernel launch and its host-side
dispatch, which is what an overhead-bound pass pays (docs/PERFORMANCE.md, *On a CUDA
machine*). Counted on the CPU with a small Llama of Llama-2's structure (full multi-head
attention, gated FFN; widths do not change the count), the head as one product (as on a
GPU), over ``TransformersTarget.forward``.

    python benchmarks/probes/pass_ops.py [CONTEXT,CONTEXT,...]   # default 128,1024,4096

Prints, per numerics and point (B sessions x n new tokens on c cached), the operations of a
pass of a 2-layer and a 4-layer model, the per-layer count (their difference / 2) and the
rest of the pass.
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from edgespec.runtime.backends.base import ForwardItem
from edgespec.runtime.backends.transformers_backend import Numerics, TransformersTarget


class OpCounter(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Counts every aten operation dispatched while active, by name."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.ops[str(func.overloadpacket.__name__)] += 1
        return func(*args, **(kwargs or {}))


def small_llama(num_layers: int, numerics: Numerics) -> TransformersTarget:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=num_layers,
        num_attention_heads=4, num_key_value_heads=4, head_dim=16,
        max_position_embeddings=1 << 14, bos_token_id=None, pad_token_id=None, eos_token_id=None,
    )  # fmt: skip
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()  # type: ignore[no-untyped-call]
    return TransformersTarget(
        model, blocked_head_logits=False, check_masks=False, numerics=numerics
    )


def pass_ops(target: TransformersTarget, batch: int, new: int, context: int) -> Counter[str]:
    """The operations of one pass of ``batch`` items of ``new`` tokens on ``context`` cached."""
    tokens = tuple(1 + t % 500 for t in range(context))
    kv = target.forward([ForwardItem(None, 0, tokens, 1)])[0].kv
    items = [ForwardItem(kv, context, tuple(range(2, 2 + new)), new) for _ in range(batch)]
    target.forward(items)  # warm-up: lazily built state is not counted
    counter = OpCounter()
    with counter:
        target.forward(items)
    return counter.ops


def main() -> None:
    contexts = [int(c) for c in sys.argv[1].split(",")] if len(sys.argv) > 1 else [128, 1024, 4096]
    print("numerics  B  n     c  ops(2 layers)  ops(4 layers)  per layer  rest  top per-layer ops")
    for numerics in ("lossy", "exact"):
        targets = {layers: small_llama(layers, numerics) for layers in (2, 4)}
        for batch, new in ((1, 1), (8, 4)):
            for context in contexts:
                two, four = (pass_ops(targets[k], batch, new, context) for k in (2, 4))
                per_layer = (sum(four.values()) - sum(two.values())) / 2
                rest = sum(two.values()) - 2 * per_layer
                top = ((four - two) + Counter()).most_common(4)
                names = ", ".join(f"{n} {c / 2:g}" for n, c in top)
                print(f"{numerics:8} {batch:2} {new:2} {context:5} {sum(two.values()):14} "
                      f"{sum(four.values()):14} {per_layer:10g} {rest:5g}  {names}")  # fmt: skip


if __name__ == "__main__":
    main()
