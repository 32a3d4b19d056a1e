"""examples/: each script runs and shows what it says (docs/SIMULATOR.md, "Adding a
policy", points readers at them)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("grpc")

from edgespec.config import ConfigError, PolicySpec
from edgespec.policies.fusing import fusing
from edgespec.policies.interfaces import WindowDecision, WindowObservation
from edgespec.policies.registry import (
    WINDOW,
    WINDOW_FUSES,
    PolicyConfigError,
    build_policy,
    build_policy_at,
    window_fuses,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def window_policy() -> ModuleType:
    return _load("window_policy")


def _obs(last_num_accepted: int | None) -> WindowObservation:
    return WindowObservation(4, recent_acceptance=0.5, last_num_accepted=last_num_accepted)


def test_the_backoff_policy_decides_from_the_last_round(window_policy: ModuleType) -> None:
    policy = window_policy.BackoffWindow(gamma=5, backoff_gamma=2)
    assert policy.next_window(_obs(None)) == WindowDecision(5)  # before the first round
    assert policy.next_window(_obs(0)) == WindowDecision(2)
    assert policy.next_window(_obs(1)) == WindowDecision(5)
    with pytest.raises(ValueError, match="need 1 <= backoff_gamma <= gamma, got 6, 5"):
        window_policy.BackoffWindow(gamma=5, backoff_gamma=6)


def test_it_is_a_registered_policy_only_while_registered(window_policy: ModuleType) -> None:
    before = dict(WINDOW), dict(WINDOW_FUSES)
    with window_policy.registered():
        built = build_policy("window", "fixed_backoff", {"gamma": 3, "backoff_gamma": 2})
        assert built == window_policy.BackoffWindow(gamma=3, backoff_gamma=2)
        assert window_fuses(PolicySpec("fixed_backoff")) is fusing(built, "distributed") is False
        bad = PolicySpec("fixed_backoff", {"gamma": 1, "backoff_gamma": 2})
        with pytest.raises(ConfigError) as error:  # at the parameter its PolicyParamError names
            build_policy_at("policies.window", "window", bad)
        assert error.value.path == "policies.window.params.backoff_gamma"
    assert before == (WINDOW, WINDOW_FUSES)
    with pytest.raises(PolicyConfigError, match="unknown window policy 'fixed_backoff'"):
        build_policy("window", "fixed_backoff", {})


def test_the_script_runs_the_policy_in_both_hosts(
    window_policy: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    assert window_policy.main() == 0
    out = capsys.readouterr().out
    real = re.search(r"real server: (\d+) rounds, drafted per round: ([\d ]+)\n", out)
    assert real is not None, out
    windows = [int(w) for w in real[2].split()]
    assert len(windows) == int(real[1])
    assert {4, 1} <= set(windows)  # the full window, and the back-off after a rejection
    assert f"simulator: the same {real[1]} rounds (drafted, accepted, committed)" in out
