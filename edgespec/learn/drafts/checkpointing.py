"""A training loop that resumes where it stopped (:class:`Checkpointer`, used by
:func:`edgespec.learn.drafts.distill.train_draft` and
:func:`edgespec.learn.drafts.feature_train.train_feature_draft`), and how a command finds
the checkpoint its rerun resumes (:func:`resumed_or_fresh`).

The loop runs its batches in the order :meth:`Checkpointer.batch_order` gives, marks the
start of each update of its weights (:meth:`~Checkpointer.changing`) and its end
(:meth:`~Checkpointer.step_done`, which saves the checkpoint when
:data:`~edgespec.learn.drafts.checkpoint.CHECKPOINT_EVERY_S` have passed since the last
save); a stop (Ctrl-C's ``KeyboardInterrupt``, SIGTERM's ``Terminated``: a
``BaseException`` that is no ``Exception``) that reaches it within
:meth:`~Checkpointer.saved_on_stop` saves the last finished step, unless it came while the
weights were being updated (then the last save stands). A run resumed from the checkpoint
takes the same batches with the same random states and learning rates from the next step on,
so with no time budget its weights equal, bit for bit, those of a run never stopped (on the
same number of threads); a time budget counts the seconds of the earlier runs."""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import torch

from edgespec.errors import UserInputError
from edgespec.learn.drafts import checkpoint as ckpt
from edgespec.learn.drafts.checkpoint import CHECKPOINT_EVERY_S, Checkpoint, Position


class Checkpointer:
    """A training loop's position, its training seconds and its checkpoint at ``path``
    (``None``: none kept), tagged with ``settings`` and the data's ``data_sha256``;
    ``resumed``: the checkpoint it continues. Times are ``clock()`` values."""

    __slots__ = ("_at", "_batch", "_bound", "_clock", "_consistent", "_epoch", "_every_s",
                 "_last_save_s", "_started_s", "data_sha256", "path", "resumed", "saved_step",
                 "settings")  # fmt: skip

    def __init__(
        self,
        path: Path | None = None,
        settings: Mapping[str, Any] | None = None,
        data_sha256: str = "",
        resumed: Checkpoint | None = None,
        every_s: float = CHECKPOINT_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path, self.settings, self.data_sha256 = path, dict(settings or {}), data_sha256
        self.resumed, self.saved_step = resumed, None if resumed is None else resumed.position.step
        self._every_s, self._clock = every_s, clock
        self._at = Position() if resumed is None else resumed.position
        self._started_s = self._last_save_s = clock()
        self._bound: tuple[torch.nn.Module, torch.optim.Optimizer, Any] | None = None
        self._epoch: tuple[int, tuple[Any, ...] | None, tuple[int, ...]] = (0, None, ())
        self._batch, self._consistent = 0, True

    @property
    def step(self) -> int:
        """Optimizer steps done, the resumed run's included."""
        return self._at.step

    @property
    def elapsed_before_s(self) -> float:
        """Training seconds of the runs this one resumes."""
        return 0.0 if self.resumed is None else self.resumed.position.elapsed_s

    def elapsed_s(self) -> float:
        """Training seconds so far, the resumed run's included."""
        return self.elapsed_before_s + self._clock() - self._started_s

    def start(
        self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any, total: int
    ) -> None:
        """Bind the loop's ``model``, ``optimizer`` and ``scheduler`` (``None``: none) of
        ``total`` steps; a resumed checkpoint's states are loaded into them (one that does
        not fit is an error naming it); the training seconds count from now."""
        self._bound = (model, optimizer, scheduler)
        if (saved := self.resumed) is not None:
            if saved.position.total_steps != total:
                raise self._unfit(f"{saved.position.total_steps} steps in all, now {total}")
            try:
                model.load_state_dict(saved.model)
                optimizer.load_state_dict(saved.optimizer)
                if scheduler is not None and saved.scheduler is not None:
                    scheduler.load_state_dict(saved.scheduler)
                if saved.position.torch_rng is not None:
                    torch.set_rng_state(saved.position.torch_rng)
            except (RuntimeError, KeyError, ValueError, TypeError) as exc:
                raise self._unfit(str(exc).splitlines()[0] if str(exc) else repr(exc)) from None
        self._at = dataclasses.replace(self._at, total_steps=total)
        self._started_s = self._last_save_s = self._clock()

    def _unfit(self, why: str) -> UserInputError:
        return UserInputError(
            f"{self.path}: the training checkpoint does not fit this run ({why}); {ckpt.DISCARD}"
        )

    def batch_order(
        self, epochs: int, num_batches: int, rng: random.Random, carried: bool = False
    ) -> Iterator[int]:
        """The index of each batch to run, epoch by epoch: each epoch shuffles, with
        ``rng``, ``range(num_batches)`` afresh or, when ``carried``, the previous epoch's
        order (as a loop that shuffles its list of batches in place); from the position
        resumed, its epoch's order drawn again from the state saved at the epoch's start."""
        at = self._at
        if at.epoch_order and sorted(at.epoch_order) != list(range(num_batches)):
            raise self._unfit(f"its batch order is not one of this run's {num_batches} batches")
        if at.epoch_rng is not None:
            rng.setstate(at.epoch_rng)
        order, first = list(at.epoch_order) or list(range(num_batches)), at.batch
        for epoch in range(at.epoch, epochs):
            if not carried:
                order = list(range(num_batches))
            self._epoch = (epoch, rng.getstate(), tuple(order) if carried else ())
            rng.shuffle(order)
            for index in range(first, num_batches):
                self._batch = index + 1
                yield order[index]
            first = 0

    def changing(self) -> None:
        """The weights are being updated: a stop now leaves them between two steps."""
        self._consistent = False

    def step_done(self) -> None:
        """One more optimizer step done: the position taken, the checkpoint saved when
        due."""
        epoch, epoch_rng, order = self._epoch
        total, elapsed_s = self._at.total_steps, self.elapsed_s()
        self._at = Position(self._at.step + 1, total, epoch, self._batch, epoch_rng, order,
                            torch.get_rng_state(), elapsed_s)  # fmt: skip
        self._consistent = True
        if self.path is not None and self._clock() - self._last_save_s >= self._every_s:
            self.save()

    def save(self) -> None:
        """Save the checkpoint of the last step done (whole or not at all)."""
        if self.path is None or self._bound is None:
            return
        model, optimizer, scheduler = self._bound
        state = None if scheduler is None else scheduler.state_dict()
        checkpoint = Checkpoint(self.settings, self.data_sha256, time.time(), self._at,
                                model.state_dict(), optimizer.state_dict(), state)  # fmt: skip
        ckpt.write_checkpoint(self.path, checkpoint)
        self.saved_step, self._last_save_s = self._at.step, self._clock()

    @contextmanager
    def saved_on_stop(self) -> Iterator[None]:
        """A stop (a ``BaseException`` that is no ``Exception``) raised in the block saves
        the last step done first, unless it came while the weights were being updated or
        that step is saved already; then it goes on."""
        try:
            yield
        except BaseException as stop:
            unsaved = self._at.step > 0 and self._at.step != self.saved_step
            if not isinstance(stop, Exception) and self._consistent and unsaved:
                self.save()
            raise

    def remove(self) -> None:
        """Delete the checkpoint (the finished draft is saved)."""
        if self.path is not None:
            self.path.unlink(missing_ok=True)


def resumed_or_fresh(
    out: Path,
    settings: Mapping[str, Any],
    data_sha256: str,
    overwrite: bool,
    say: Callable[[str], None],
) -> Checkpointer:
    """The checkpointer of a run saving its draft to ``out``: resuming the checkpoint there
    (said: ``resuming training at step S/T (checkpoint of <time>)``) when it was made
    with these ``settings`` (else refused, naming each that differs) on this data;
    discarded, in a line said, when ``overwrite`` or when it was made on other data (the
    data stages have added to it since, or other folders were given); one that cannot be
    read is refused naming it. Leftover temporary files of it are removed."""
    path = ckpt.checkpoint_path(out)
    ckpt.remove_leftover_temporaries(path)
    fresh = Checkpointer(path, settings, data_sha256)
    if not path.is_file():
        return fresh
    if overwrite:
        path.unlink()
        say(f"discarded the training checkpoint {path} (--overwrite): training starts at step 0")
        return fresh
    saved = ckpt.read_checkpoint(path)
    ckpt.check_same_settings(path, saved.settings, settings)
    if saved.data_sha256 != data_sha256:
        path.unlink()
        say(f"discarded the training checkpoint {path}: it was made on other training data "
            "(the data stages have added to it, or other folders were given); training "
            "starts at step 0")  # fmt: skip
        return fresh
    at, when = saved.position, datetime.fromtimestamp(saved.saved_at_unix)
    say(f"resuming training at step {at.step}/{at.total_steps} (checkpoint of "
        f"{when:%Y-%m-%d %H:%M:%S})")  # fmt: skip
    return Checkpointer(path, settings, data_sha256, resumed=saved)


@contextmanager
def told_where_saved(run: Checkpointer, say: Callable[[str], None]) -> Iterator[None]:
    """Training that ends by an error or a stop says, with the checkpoint saved, where it
    is and that the same command resumes it."""
    try:
        yield
    except BaseException:
        if run.saved_step is not None and run.path is not None and run.path.is_file():
            say(f"training stopped; its checkpoint of step {run.saved_step} is in {run.path}: "
                "the same command resumes it")  # fmt: skip
        raise


def said_on(console: Any) -> Callable[[str], None]:
    """Lines said on a Rich ``console`` whole (not wrapped: a log file keeps them one)."""

    def say(line: str) -> None:
        console.print(line, soft_wrap=True)

    return say
