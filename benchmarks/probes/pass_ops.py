"""How many torch operations one verification pass dispatches, per layer and per pass, in
exact and lossy numerics: on a GPU each is at least one kernel launch and its host-side
dispatch, which is what an overhead-bound pass pays (docs/PERFORMANCE.md, *On a CUDA
machine*). Counted on the CPU with a small Llama of Llama-2's structure (full multi-head
attention, gated FFN; widths do not change the count), the head as one product (as on a
GPU), over ``TransformersTarget.forward``.

    python benchmarks/probes/pass_ops.py [CONTEXT,CONTEXT,...] [--json PATH]
    # default contexts 128,1024,4096

Prints, per numerics and point (B sessions x n new tokens on c cached), the operations of a
pass of a 2-layer and a 4-layer model, the per-layer count (their difference / 2) and the
rest of the pass; ``--json PATH`` writes the same rows (``probe_json.py``).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch
from probe_json import add_json_option, finish, int_list
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


@dataclass(frozen=True, slots=True)
class PassRow:
    """The operations of one point's pass of the 2- and 4-layer models."""

    numerics: Numerics
    num_sessions: int
    num_new_tokens: int
    num_cached_tokens: int
    num_ops_2_layers: int
    num_ops_4_layers: int
    num_ops_per_layer: float
    num_ops_rest: float
    top_ops_per_layer: dict[str, float]


def pass_row(
    numerics: Numerics, point: tuple[int, int, int], two: Counter[str], four: Counter[str]
) -> PassRow:
    """The row of ``point`` (sessions, new tokens, cached tokens) from the two counts."""
    per_layer = (sum(four.values()) - sum(two.values())) / 2
    top = (four - two).most_common(4)
    return PassRow(
        numerics, *point, sum(two.values()), sum(four.values()), per_layer,
        sum(two.values()) - 2 * per_layer, {name: count / 2 for name, count in top},
    )  # fmt: skip


def format_row(row: PassRow) -> str:
    names = ", ".join(f"{n} {c:g}" for n, c in row.top_ops_per_layer.items())
    return (f"{row.numerics:8} {row.num_sessions:2} {row.num_new_tokens:2} "
            f"{row.num_cached_tokens:5} {row.num_ops_2_layers:14} {row.num_ops_4_layers:14} "
            f"{row.num_ops_per_layer:10g} {row.num_ops_rest:5g}  {names}")  # fmt: skip


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="operations of one verification pass")
    parser.add_argument("contexts", nargs="?", type=int_list, default=[128, 1024, 4096],
                        metavar="CONTEXT,CONTEXT,...")  # fmt: skip
    add_json_option(parser)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    print("numerics  B  n     c  ops(2 layers)  ops(4 layers)  per layer  rest  top per-layer ops")
    rows = []
    for numerics in ("lossy", "exact"):
        targets = {layers: small_llama(layers, numerics) for layers in (2, 4)}
        for batch, new in ((1, 1), (8, 4)):
            for context in args.contexts:
                two, four = (pass_ops(targets[k], batch, new, context) for k in (2, 4))
                rows.append(pass_row(numerics, (batch, new, context), two, four))
                print(format_row(rows[-1]))
    finish(args.json, "pass_ops.py", argv, {"rows": [asdict(row) for row in rows]})


if __name__ == "__main__":
    main()
