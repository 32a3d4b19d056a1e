"""benchmarks/verify_path.py: its fixed workload decodes losslessly (every session's
tokens are the target's own greedy ones) and it asks for exactly two checkouts."""

from __future__ import annotations

from types import ModuleType

import pytest

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.testing import tiny_llama
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.benchmarks.scripts import load_script


def _script() -> ModuleType:
    return load_script("verify_path.py", "verify_path_script")


def test_the_workload_commits_the_targets_greedy_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    script = _script()
    target = TransformersTarget(tiny_llama(seed=0), check_masks=False)  # not about numerics
    monkeypatch.setattr(script, "MAX_NEW_TOKENS", 12)  # its own 48 cost 50 s here
    prompts = [(1, 2, 3, 4, 5), (9, 9, 9), (12, 30, 12, 30, 12)]
    cpu_s, outputs = script._one_run(target, prompts)
    assert cpu_s > 0
    want = [list(target_greedy_decode(target, p, script.MAX_NEW_TOKENS)) for p in prompts]
    assert outputs == want


def test_it_needs_two_checkouts(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _script().main(["--versions", "."])
    assert "--versions needs two checkouts, BASE,NEW" in capsys.readouterr().err
