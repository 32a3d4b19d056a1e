"""benchmarks/deadline_resend.py: each case decodes the target's own tokens, the resent
case's first call is sent again (its prompt forwarded once, as in one call), and the
outputs check holds across cases."""

from __future__ import annotations

import argparse

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.testing import tiny_llama
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.benchmarks.scripts import load_script
from tests.runtime.wrapped_target import SlowPasses


def test_the_cases_decode_alike_and_the_short_timeout_resends() -> None:
    script = load_script("deadline_resend.py", "deadline_resend_script")
    inner = TransformersTarget(tiny_llama(seed=0), check_masks=False)  # not about numerics
    target = SlowPasses(inner, each_s=0.05)  # a 40-token prompt in parts of 8: 6 passes
    prompts = [
        tuple((7 * i + 3) % 64 for i in range(40)),
        tuple((5 * i + 1) % 64 for i in range(40)),
    ]
    args = argparse.Namespace(max_new_tokens=6, timeout_s=0.12, parts=8)
    runs = {case: script.one_run(target, prompts, case, args) for case in script.CASES}
    want = [list(target_greedy_decode(inner, p, 6)) for p in prompts]
    assert [g["output"] for g in runs["two-at-once"]["generations"]] == want
    assert runs["one-call"]["generations"][0]["output"] == want[0]
    assert runs["resent"]["generations"][0]["output"] == want[0]
    assert runs["one-call"]["generations"][0]["resends"] == 0
    assert runs["resent"]["generations"][0]["resends"] >= 1
    assert runs["resent"]["generations"][0]["reconnects"] == 0
    for key in ("tokens_forwarded", "prefill_parts", "cache_misses"):
        assert runs["resent"][key] == runs["one-call"][key], key
    assert runs["one-call"]["cache_misses"] == 1
