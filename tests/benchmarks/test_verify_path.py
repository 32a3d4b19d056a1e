"""benchmarks/verify_path.py: its fixed workload decodes losslessly (every session's
tokens are the target's own greedy ones) and it asks for exactly two checkouts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.testing import tiny_llama
from edgespec.runtime.wire.inprocess import target_greedy_decode

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "verify_path.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("verify_path_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_workload_commits_the_targets_greedy_tokens() -> None:
    script = _script()
    target = TransformersTarget(tiny_llama(seed=0), check_masks=False)  # not about numerics
    script.MAX_NEW_TOKENS = 12  # its own 48 cost 50 s here
    prompts = [(1, 2, 3, 4, 5), (9, 9, 9), (12, 30, 12, 30, 12)]
    cpu_s, outputs = script._one_run(target, prompts)
    assert cpu_s > 0
    want = [list(target_greedy_decode(target, p, script.MAX_NEW_TOKENS)) for p in prompts]
    assert outputs == want


def test_it_needs_two_checkouts(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _script().main(["--versions", "."])
    assert "--versions needs two checkouts, BASE,NEW" in capsys.readouterr().err
