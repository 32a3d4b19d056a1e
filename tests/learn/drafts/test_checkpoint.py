"""Training resumes where it stopped: a draft's (and a feature draft's) training stopped
after k steps and resumed from its checkpoint ends with the weights, bit for bit, of a
training never stopped, its time budget counting the earlier run's seconds. Both loops
restarted from step 0 (no checkpoint was kept)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import torch

from edgespec.learn.drafts import checkpoint, distill
from edgespec.learn.drafts import feature_train as ft
from edgespec.learn.drafts.checkpoint import checkpoint_path, read_checkpoint
from edgespec.learn.drafts.checkpointing import Checkpointer
from edgespec.learn.drafts.distill import DraftArchitecture, TrainSettings, init_draft
from edgespec.learn.drafts.samples import Sample
from edgespec.models.feature_draft import FeatureDraftConfig, FeatureDraftNet, target_rows
from edgespec.runtime.commands.signals import Terminated
from tests.models.tiny import SPECIAL, VOCAB, tiny_target

SETTINGS = {"--lr": 0.01}
NEVER_S = math.inf  # no periodic save: only a stop saves


def _sample(i: int) -> Sample:
    prompt = torch.tensor([2, 10 + i % 7, 11 + i % 5][: 2 + i % 2])
    output = torch.tensor([12 + (i * 3) % 20 + j for j in range(2 + i % 3)])
    return Sample(prompt, output, output[:, None], torch.zeros(len(output), 1))


SAMPLES = [_sample(i) for i in range(10)]
DRAFT = TrainSettings(epochs=3, tokens_per_step=16, learning_rate=1e-2, warmup_steps=2)


def _draft(seed: int = 0) -> Any:
    torch.manual_seed(seed)
    arch = DraftArchitecture(VOCAB, hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32)
    return init_draft(torch.randn(VOCAB, 24), list(range(VOCAB)), arch, SPECIAL, "tiny")


FEATURE = ft.FeatureTrainSettings(num_steps=2, sequences_per_batch=3, epochs=3)
TARGET = tiny_target()


def _sequences() -> list[ft.FeatureSequence]:
    generator = torch.Generator().manual_seed(0)
    out = []
    for i in range(10):
        ids = torch.randint(3, VOCAB, (4 + i % 4,), generator=generator)
        feats = torch.randn(len(ids), 32, generator=generator).half()
        out.append(ft.FeatureSequence(ids, feats, 2))
    return out


def _net(seed: int = 0) -> FeatureDraftNet:
    torch.manual_seed(seed)
    kept = tuple(range(VOCAB))
    config = FeatureDraftConfig("tiny", VOCAB, 32, kept, num_heads=2, head_dim=8)
    return FeatureDraftNet(config, *target_rows(TARGET, kept))


def _train(
    loop: str,
    run: Checkpointer,
    seen: list[int],
    hook: Callable[[int], None] | None = None,
    seed: int = 0,
    **changes: Any,
) -> Any:
    """A fresh model (of init ``seed``: a resumed one's init is not the first run's) trained
    by ``loop`` (``draft``, ``feature``) with ``run``; each step's number appended to
    ``seen``, then given to ``hook``."""

    def progress(step: int, *_: Any) -> None:
        seen.append(step)
        if hook is not None:
            hook(step)

    if loop == "draft":
        draft = _draft(seed)
        distill.train_draft(draft, SAMPLES, _changed(DRAFT, changes), progress, run)
        return draft
    net = _net(seed)
    ft.train_feature_draft(net, _sequences(), _changed(FEATURE, changes), progress, run)
    return net


def _changed(settings: Any, changes: dict[str, Any]) -> Any:
    return dataclasses.replace(settings, **changes)


def _stop_at(step: int, stop: BaseException) -> Callable[[int], None]:
    def hook(done: int) -> None:
        if done == step:
            raise stop

    return hook


def _assert_same_weights(a: torch.nn.Module, b: torch.nn.Module) -> None:
    left, right = a.state_dict(), b.state_dict()
    assert left.keys() == right.keys()
    for name, tensor in left.items():
        assert torch.equal(tensor, right[name]), name


def _resumed(path: Path, **kw: Any) -> Checkpointer:
    return Checkpointer(path, SETTINGS, "data", resumed=read_checkpoint(path), **kw)


def _reference(loop: str, **changes: Any) -> tuple[Any, list[int]]:
    seen: list[int] = []
    return _train(loop, Checkpointer(), seen, **changes), seen


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return checkpoint_path(tmp_path / "out")


@pytest.mark.parametrize("loop", ["draft", "feature"])
@pytest.mark.parametrize("stop_step", [1, 4, 6])
@pytest.mark.parametrize("stop", [KeyboardInterrupt(), Terminated()], ids=["sigint", "sigterm"])
def test_a_training_stopped_and_resumed_equals_one_never_stopped(
    loop: str, stop_step: int, stop: BaseException, path: Path
) -> None:
    reference, steps = _reference(loop)
    assert len(steps) >= 8  # several epochs of several batches
    seen: list[int] = []
    with pytest.raises(type(stop)):
        _train(loop, Checkpointer(path, SETTINGS, "data", every_s=NEVER_S), seen,
               _stop_at(stop_step, stop))  # fmt: skip
    assert read_checkpoint(path).position.step == stop_step
    resumed: list[int] = []
    model = _train(loop, _resumed(path), resumed, seed=7)
    assert resumed == steps[stop_step:]
    _assert_same_weights(model, reference)


@pytest.mark.parametrize("loop", ["draft", "feature"])
def test_a_stop_in_the_middle_of_a_step_saves_the_step_before(
    loop: str, path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the loss is computed: the weights are still the last step's."""
    reference, steps = _reference(loop)
    module: Any = distill if loop == "draft" else ft
    loss, calls = module.batch_loss, []

    def interrupted(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 6:
            raise KeyboardInterrupt
        return loss(*args)

    monkeypatch.setattr(module, "batch_loss", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _train(loop, Checkpointer(path, SETTINGS, "data", every_s=NEVER_S), [])
    monkeypatch.setattr(module, "batch_loss", loss)
    assert read_checkpoint(path).position.step == 5
    resumed: list[int] = []
    _assert_same_weights(_train(loop, _resumed(path), resumed, seed=7), reference)
    assert resumed == steps[5:]


def test_a_stop_while_the_weights_change_keeps_the_last_checkpoint(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C inside the optimizer's update of step 4 (the weights half a step on) saves
    nothing: step 2's checkpoint (1 s a step, saved every 2 s) stands, not step 3's
    position with step 4's weights, and resumes exactly."""
    reference, steps = _reference("draft")
    update, calls = torch.optim.AdamW.step, []

    def interrupted(self: Any, *args: Any, **kwargs: Any) -> Any:
        done = update(self, *args, **kwargs)
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return done

    clock = _Clock(0.0, 1.0)
    with _slow_steps(distill, clock, monkeypatch), monkeypatch.context() as patched:
        patched.setattr(torch.optim.AdamW, "step", interrupted)
        with pytest.raises(KeyboardInterrupt):
            _train("draft", Checkpointer(path, SETTINGS, "data", every_s=2.0, clock=clock), [])
    assert read_checkpoint(path).position.step == 2
    resumed: list[int] = []
    _assert_same_weights(_train("draft", _resumed(path), resumed, seed=7), reference)
    assert resumed == steps[2:]


class _Clock:
    """Seconds that pass only as a loss is computed: ``step_s`` each."""

    def __init__(self, start_s: float, step_s: float) -> None:
        self.now_s, self.step_s = start_s, step_s

    def __call__(self) -> float:
        return self.now_s

    def slow(self, loss: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any) -> Any:
            self.now_s += self.step_s
            return loss(*args)

        return timed


@contextmanager
def _slow_steps(module: Any, clock: _Clock, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with monkeypatch.context() as patched:
        patched.setattr(module, "batch_loss", clock.slow(module.batch_loss))
        yield


@pytest.mark.parametrize("loop", ["draft", "feature"])
def test_a_resumed_training_goes_on_with_the_time_budget_left(
    loop: str, path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """3 s a step, a budget of 13 s: 5 steps (the draft's loop stops once past it, the
    feature draft's before its schedule's end); stopped after 2 and resumed, 5 in all with
    the same learning rates (they follow the time spent), not 2 + 5."""
    module: Any = distill if loop == "draft" else ft
    changes: dict[str, Any] = {"time_budget_s": 13.0, "epochs": 20}
    if loop == "draft":
        changes["warmup_steps"] = 1
    clock, steps, resumed = _Clock(0.0, 3.0), list[int](), list[int]()
    with _slow_steps(module, clock, monkeypatch):
        reference = _train(loop, Checkpointer(clock=clock), steps, **changes)
    assert 3 < len(steps) < 8
    clock = _Clock(100.0, 3.0)
    with _slow_steps(module, clock, monkeypatch), pytest.raises(KeyboardInterrupt):
        run = Checkpointer(path, SETTINGS, "data", every_s=NEVER_S, clock=clock)
        _train(loop, run, [], _stop_at(2, KeyboardInterrupt()), **changes)
    assert read_checkpoint(path).position.elapsed_s == 6.0
    clock = _Clock(5000.0, 3.0)
    with _slow_steps(module, clock, monkeypatch):
        model = _train(loop, _resumed(path, clock=clock), resumed, seed=7, **changes)
    assert resumed == steps[2:]
    _assert_same_weights(model, reference)


def test_the_checkpoint_is_saved_at_most_every_interval_and_a_crash_resumes_from_it(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1 s a step, a save due every 3 s: after steps 3 and 6. A crash (an error, not a
    stop: no save of its own) at step 8 leaves step 6's, which resumes exactly."""
    reference, steps = _reference("draft")
    clock, saved = _Clock(0.0, 1.0), list[int]()
    write = checkpoint.write_checkpoint

    def recorded(where: Path, written: Any) -> None:
        saved.append(written.position.step)
        write(where, written)

    monkeypatch.setattr(checkpoint, "write_checkpoint", recorded)  # as checkpointing calls it
    with _slow_steps(distill, clock, monkeypatch), pytest.raises(RuntimeError, match="crash"):
        run = Checkpointer(path, SETTINGS, "data", every_s=3.0, clock=clock)
        _train("draft", run, [], _stop_at(8, RuntimeError("crash")))
    assert saved == [3, 6]
    assert read_checkpoint(path).position.step == 6
    resumed: list[int] = []
    _assert_same_weights(_train("draft", _resumed(path), resumed, seed=7), reference)
    assert resumed == steps[6:]
