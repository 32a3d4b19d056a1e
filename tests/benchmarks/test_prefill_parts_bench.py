"""benchmarks/prefill_parts.py: its clients decode losslessly through the server's
scheduler with the long prompts in parts under either batching policy, and its summary counts
the short rounds sent while the long rounds were in flight."""

from __future__ import annotations

import argparse
import asyncio
from types import ModuleType

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.testing import tiny_llama
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.benchmarks.scripts import load_script


def _script() -> ModuleType:
    return load_script("prefill_parts.py", "prefill_parts_script")


def test_every_session_gets_the_targets_greedy_tokens() -> None:
    script = _script()
    target = TransformersTarget(tiny_llama(seed=0), check_masks=False)  # not about numerics
    long = tuple((7 * i + 3) % 64 for i in range(40))
    shorts = [(1, 2, 3, 4, 5), (9, 9, 9)]
    longs = [long, long[::-1]]
    args = argparse.Namespace(max_new_tokens=6, delay_s=0.0, max_batch_tokens=16)
    for batching in ("fcfs", "decodes-first", "decodes-first:max_prefill_tokens=12"):
        prompts = {"short": shorts, "long": longs}
        run = asyncio.run(script._one_run(target, prompts, 8, batching, args))
        want = {f"s{i}": list(target_greedy_decode(target, p, 6)) for i, p in enumerate(shorts)}
        want |= {f"long{i}": list(target_greedy_decode(target, p, 8)) for i, p in enumerate(longs)}
        assert run.outputs == want
        assert len(run.long_rounds) == 2 and all(0 < a < b for a, b in run.long_rounds)
        assert len(run.short_rounds) >= 2


def test_the_summary_counts_the_short_rounds_sent_during_the_long_one() -> None:
    script = _script()
    run = script._Run(short_rounds=[(0.0, 1.0), (2.0, 3.0), (5.0, 7.0), (6.0, 6.5)])
    run.long_rounds = [(2.5, 5.5), (1.5, 4.0)]  # from the first sending to the last reply
    assert script._summary(run) == {
        "long_first_round_s": 4.0,
        "short_rounds_during": 2,
        "short_wait_median_s": 1.5,
        "short_wait_max_s": 2.0,
    }


def test_a_policy_takes_one_parameter_after_its_name() -> None:
    script = _script()
    assert script._policy_spec("fcfs") == ("fcfs", {})
    spec = script._policy_spec("decodes-first:max_prefill_tokens=1024")
    assert spec == ("decodes-first", {"max_prefill_tokens": 1024})
