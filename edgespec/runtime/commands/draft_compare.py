"""``edgespec draft --compare``: centralized then distributed (or, with ``--mode fused``,
fused: the server drafts too) decoding of one prompt, the
speed-up of the speculative run over centralized tokens/s and whether the outputs are
token-identical (greedy; sampled outputs are two draws of one distribution, not compared
token by token: ``--ignore-eos`` gives both the same length), and which baseline the
speed-up is over: the server's numerics (its Health says them; an older server does not,
and nothing is claimed). On the exact server the target alone decodes on the
batch-invariant kernels, which pad every pass to ``ROW_MULTIPLE`` rows: a decoded token
costs about what a verified block does, so the speed-up over it overstates the one over
plain decoding on the library's kernels (``edgespec serve --backend transformers-lossy``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from edgespec.core.sequences import first_difference
from edgespec.runtime.commands.draft_run import DraftRun


def compare(
    run: DraftRun, numerics: str | None, draft: Any, vocab_size: int, window: Any, stop: Any,
    args: argparse.Namespace, ready: Callable[[], None],
) -> int:  # fmt: skip
    """``--compare``: centralized (``ready`` before its first token is asked for), then
    distributed (``--mode fused``: fused), on the same prompt, each output under its label
    on stdout; on stderr the speed-up (over the server's ``numerics``) and whether greedy
    outputs are token-identical (exit 1 when they are not)."""

    def ready_then_header() -> None:  # stderr's "ready" line before stdout's first label
        ready()
        sys.stderr.flush()
        print("centralized (the server decodes alone):", flush=True)

    central = run.server_side(fused=False, ready=ready_then_header)
    central.report("centralized")
    mode = args.mode if args.mode == "fused" else "distributed"
    if mode == "fused":
        print("fused (drafted and verified by the server):", flush=True)
        spec = run.server_side(fused=True)
    else:
        print("distributed (drafted here, verified by the server):", flush=True)
        spec = run.distributed(draft, vocab_size, window, stop, args.records is not None)
    spec.report(mode)
    if args.records:
        spec.write_records(args.records)
    sampled = run.config.temperature > 0
    same = sampled or central.output == spec.output
    outputs = (
        "sampled (two draws of the target's distribution, not compared token by token)"
        if sampled
        else "identical"
        if same
        else f"differ from token {first_difference(central.output, spec.output)}"
    )
    for line in speedup_lines(spec.request.tokens_per_s, central.request.tokens_per_s,
                              numerics, outputs, mode):  # fmt: skip
        print(line, file=sys.stderr)
    return 0 if same else 1


def speedup_lines(
    speculative_tokens_per_s: float, centralized_tokens_per_s: float, numerics: str | None,
    outputs: str, mode: str = "distributed",
) -> list[str]:  # fmt: skip
    """The speed-up line of the speculative run (``mode``: distributed or fused), naming
    the server's ``numerics`` when it says them, and on an exact server the line saying what
    its centralized baseline is."""
    ratio = speculative_tokens_per_s / max(centralized_tokens_per_s, 1e-12)
    baseline = "" if not numerics else f", the server's {numerics} kernels"
    lines = [
        f"speed-up: {ratio:.2f}x ({mode} {speculative_tokens_per_s:.1f} tok/s over "
        f"centralized {centralized_tokens_per_s:.1f} tok/s{baseline}); outputs {outputs}"
    ]
    if numerics == "exact":
        from edgespec.runtime.backends.batch_invariant import ROW_MULTIPLE

        lines.append(
            f"baseline: the exact kernels pad each pass to {ROW_MULTIPLE} rows, so the target "
            "alone decodes faster on the library's kernels (edgespec serve --backend "
            "transformers-lossy); SD's speed-up over plain decoding is measured against such "
            "a server"
        )
    return lines
