"""The command line's shared flags: those several subcommands take, each defined once here
so they read and check alike (their value types, a bad value being argparse's usage error
before any work starts, are in :mod:`edgespec.argument_types`): thread, worker and
CPU counts, seeds, the real pair, the training group (:func:`add_training_arguments`,
read back as a :class:`TrainingOptions`) and where a model runs (:func:`add_device_arguments`,
read back as a :class:`DevicePlacement`; whether that device is there is checked in
:mod:`edgespec.models.devices`, with torch)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from edgespec.argument_types import (
    cpu_list,
    int_at_most,
    open_fraction,
    optimiser_decay,
    optimiser_rate,
    positive_float,
    positive_int,
    seed_int,
    torch_threads,
)

MAX_BUDGET_MINUTES = 10_000_000
"""The largest time budget a ``--*-minutes`` flag takes (10,000,000 minutes, about 19
years): a larger one could overflow to ``inf`` in seconds (``1e308`` × 60)."""


def budget_minutes(text: str) -> float:
    """A time budget in minutes (``--train-minutes``): a finite number > 0 and at most
    :data:`MAX_BUDGET_MINUTES`."""
    value = positive_float(text)
    if value > MAX_BUDGET_MINUTES:
        raise argparse.ArgumentTypeError(
            f"must be at most {MAX_BUDGET_MINUTES:,} minutes, got {value!r}"
        )
    return value


MAX_DRAFTER_PROCESSES = 256
"""The most drafter processes a ``--clients`` flag starts (``calibrate``, ``reproduce
wisp-serving``): each client is a Python process of its own, with its own drafter."""


drafter_processes = int_at_most(MAX_DRAFTER_PROCESSES, " (each client is a process)")
"""``--clients``, one process each: an integer in ``[1, MAX_DRAFTER_PROCESSES]``."""


def add_threads(
    parser: argparse.ArgumentParser, default: int | None, what: str = "torch CPU threads"
) -> None:
    """``--threads N`` (1..:data:`MAX_THREADS`): torch's intra-op threads; ``default`` None
    leaves torch's."""
    stated = "torch's" if default is None else str(default)
    parser.add_argument(
        "--threads", type=torch_threads, default=default, help=f"{what} (default {stated})"
    )


def add_threads_and_cpus(parser: argparse.ArgumentParser, side: str) -> None:
    """``--threads N`` then ``--cpus LIST``: torch's threads, and the CPUs ``side`` runs on,
    one torch thread each unless ``--threads`` (the drafter and the server on one machine,
    each on CPUs of its own); :func:`edgespec.runtime.commands.cpus.apply_cpus_and_threads`."""
    add_threads(parser, None, "torch CPU threads; 1 where other work shares the cores")
    parser.add_argument(
        "--cpus", type=cpu_list, default=None, metavar="LIST",
        help=f"run the {side} on these CPUs only (e.g. 0 or 0-1), one torch thread each "
        "unless --threads: give the drafter and the server CPUs of their own on one machine, "
        "as on separate devices (default: every CPU, shared)",
    )  # fmt: skip


def add_workers(
    parser: argparse.ArgumentParser, default: int, what: str = "local processes for the runs"
) -> None:
    """``--workers N`` (>= 1): processes (or Ray CPUs) running independent jobs."""
    parser.add_argument(
        "--workers", type=positive_int, default=default, help=f"{what} (default {default})"
    )


def add_quiet(parser: argparse.ArgumentParser) -> None:
    """``--quiet``: no progress bar."""
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def add_seed(parser: argparse.ArgumentParser, what: str, default: int = 0) -> None:
    """``--seed N`` (:func:`seed_int`): the seed of ``what``."""
    parser.add_argument(
        "--seed", type=seed_int, default=default, help=f"seed of {what} (default {default})"
    )


def add_real_pair(
    parser: argparse.ArgumentParser,
    target: str = "gemma3-270m",
    draft: str | None = "gemma3-270m-draft",
    draft_help: str = "draft model (name or directory) or 'ngram'",
) -> None:
    """``--target MODEL --draft MODEL``: a real draft/target pair by name or directory."""
    parser.add_argument(
        "--target", default=target, help=f"target model, name or directory (default {target})"
    )
    stated = "none" if draft is None else draft
    parser.add_argument("--draft", default=draft, help=f"{draft_help} (default {stated})")


def add_verbose(parser: argparse.ArgumentParser) -> None:
    """``--verbose``: the model libraries' progress bars and warnings (quiet without it)."""
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="show the model libraries' progress bars and warnings (default: quiet)",
    )


def add_max_new_tokens(parser: argparse.ArgumentParser, default: int) -> None:
    """``--max-new-tokens N`` (>= 1): tokens each request generates."""
    parser.add_argument(
        "--max-new-tokens",
        type=positive_int,
        default=default,
        help=f"tokens per request (default {default})",
    )


@dataclass(frozen=True, slots=True)
class TrainingOptions:
    """The optimiser settings the ``edgespec train`` commands share, one per flag of
    :func:`add_training_arguments`: ``epochs`` (``--epochs``), ``learning_rate`` (``--lr``),
    ``weight_decay`` (``--weight-decay``), ``batch_size`` (``--batch-size``) and
    ``holdout`` (``--holdout``, the share held out for validation). None: not a setting of
    that command (no flag). A value outside its range is a ``ValueError`` naming the flag."""

    epochs: int
    learning_rate: float
    weight_decay: float | None = None
    batch_size: int | None = None
    holdout: float | None = None

    def __post_init__(self) -> None:
        for field, check in _CHECKS.items():
            value = getattr(self, field)
            if value is None and field in _OPTIONAL:
                continue
            try:
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise argparse.ArgumentTypeError(f"expected a number, got {value!r}")
                check(str(value))
            except argparse.ArgumentTypeError as exc:
                raise ValueError(f"{TRAINING_FLAGS[field]}: {exc}") from None


TRAINING_FLAGS: dict[str, str] = {
    "epochs": "--epochs",
    "learning_rate": "--lr",
    "weight_decay": "--weight-decay",
    "batch_size": "--batch-size",
    "holdout": "--holdout",
}
"""Each :class:`TrainingOptions` field's flag."""

_OPTIONAL = ("weight_decay", "batch_size", "holdout")
_CHECKS: dict[str, Callable[[str], float]] = {
    "epochs": positive_int,
    "learning_rate": optimiser_rate,
    "weight_decay": optimiser_decay,
    "batch_size": positive_int,
    "holdout": open_fraction,
}
_HELP = {
    "epochs": "passes over the training data",
    "learning_rate": "AdamW learning rate",
    "weight_decay": "AdamW weight decay",
    "batch_size": "examples per optimizer step",
    "holdout": "share held out for validation",
}


def add_training_arguments(
    parser: argparse.ArgumentParser,
    *,
    defaults: TrainingOptions,
    helps: Mapping[str, str] | None = None,
) -> None:
    """The training group ``--epochs --lr --weight-decay --batch-size --holdout``: one flag
    per field of ``defaults`` that is not None, defaulting to it and checked by argparse (a
    bad value is a usage error naming the flag, exit status 2). ``helps`` rewords a flag's
    help by field name (its default is appended). Read the values back with
    :func:`training_options`; ``args.epochs``, ``args.lr``, ``args.weight_decay``,
    ``args.batch_size`` and ``args.holdout`` hold them too.

    A command switches over in two calls, e.g. a trainer taking all five::

        add_training_arguments(t, defaults=TrainingOptions(100, 1e-3, 1e-2, 256, 0.2),
                               helps={"holdout": "share of scenarios held out"})
        ...
        options = training_options(args)  # TrainingOptions(epochs=100, learning_rate=...)
    """
    wording = {**_HELP, **(helps or {})}
    unknown = sorted(set(wording) - set(TRAINING_FLAGS))
    if unknown:
        raise ValueError(f"unknown training fields {unknown}; known: {list(TRAINING_FLAGS)}")
    group = parser.add_argument_group("training")
    for field, flag in TRAINING_FLAGS.items():
        default = getattr(defaults, field)
        if default is not None:
            group.add_argument(
                flag,
                type=_CHECKS[field],
                default=default,
                help=f"{wording[field]} (default {default:g})",
            )
    parser.set_defaults(training_defaults=defaults)


def training_options(args: argparse.Namespace) -> TrainingOptions:
    """The :class:`TrainingOptions` of a command parsed with :func:`add_training_arguments`
    (the fields its ``defaults`` left None stay None)."""
    defaults: TrainingOptions = args.training_defaults
    given = {
        field: getattr(args, flag[2:].replace("-", "_"))
        for field, flag in TRAINING_FLAGS.items()
        if getattr(defaults, field) is not None
    }
    return replace(defaults, **given)


DTYPE_NAMES = ("float32", "bfloat16", "float16")
"""The weight dtypes a model can be loaded in (``--dtype``, ``ServerConfig.dtype``)."""

_DEVICE = re.compile(r"cpu|cuda(:[0-9]+)?")


def device_name(text: str) -> str:
    """``--device``: ``cpu``, ``cuda`` or ``cuda:N`` (N a GPU index); syntax only, whether
    that device exists is :func:`edgespec.models.devices.check_device_available`'s."""
    if _DEVICE.fullmatch(text) is None:
        raise argparse.ArgumentTypeError(
            f"expected cpu, cuda or cuda:N (N a GPU index), got {text!r}"
        )
    return text


def default_dtype(device: str) -> str:
    """The dtype a model loads in on ``device`` without ``--dtype``: float32 on the CPU,
    bfloat16 on a GPU."""
    return "float32" if device == "cpu" else "bfloat16"


@dataclass(frozen=True, slots=True)
class DevicePlacement:
    """Where a model runs (``device``: ``cpu``, ``cuda`` or ``cuda:N``) and the dtype of
    its weights (one of :data:`DTYPE_NAMES`); a bad value is a ``ValueError`` naming the
    flag (``--device``, ``--dtype``)."""

    device: str = "cpu"
    dtype: str = "float32"

    def __post_init__(self) -> None:
        try:
            device_name(self.device)
        except argparse.ArgumentTypeError as exc:
            raise ValueError(f"--device: {exc}") from None
        if self.dtype not in DTYPE_NAMES:
            raise ValueError(f"--dtype: expected one of {list(DTYPE_NAMES)}, got {self.dtype!r}")

    @classmethod
    def on(cls, device: str = "cpu", dtype: str | None = None) -> DevicePlacement:
        """``device`` with ``dtype``, or its default dtype (:func:`default_dtype`)."""
        return cls(device, default_dtype(device) if dtype is None else dtype)


def add_device_arguments(parser: argparse.ArgumentParser, what: str = "the model") -> None:
    """``--device cpu|cuda|cuda:N`` and ``--dtype float32|bfloat16|float16``: where ``what``
    runs and the dtype of its weights, checked by argparse (a bad value is a usage error
    naming the flag, exit status 2). Both default to ``None`` (not given); read them back
    with :func:`edgespec.models.devices.device_placement`, which resolves the defaults (cpu;
    float32 on the CPU, bfloat16 on a GPU) and checks the device exists."""
    group = parser.add_argument_group("device")
    group.add_argument(
        "--device", type=device_name, default=None, metavar="cpu|cuda|cuda:N",
        help=f"where {what} runs (default cpu); cuda needs a CUDA build of torch "
        "(docs/DEPLOY.md, On a GPU server)",
    )  # fmt: skip
    group.add_argument(
        "--dtype", choices=DTYPE_NAMES, default=None,
        help=f"dtype of {what}'s weights (default float32 on cpu, bfloat16 on cuda)",
    )  # fmt: skip


def placement_of(args: argparse.Namespace) -> DevicePlacement:
    """The :class:`DevicePlacement` of a command parsed with :func:`add_device_arguments`,
    defaults resolved (whether the device exists is
    :func:`edgespec.models.devices.device_placement`'s, which commands call)."""
    return DevicePlacement.on(args.device or "cpu", args.dtype)
