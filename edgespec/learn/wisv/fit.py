"""``edgespec train wisv``'s library: relabel, train the head on a ``wisv-data`` file
(:mod:`edgespec.learn.wisv.train`) and write its three files (:func:`train_and_write`).

The command (:mod:`edgespec.learn.wisv.command`) parses into a :class:`FitConfig`.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from edgespec.errors import UserInputError
from edgespec.learn.wisv.data_files import check_given_once, check_one_target
from edgespec.output_paths import write_text_atomically

if TYPE_CHECKING:
    from edgespec.learn.wisv.dataset import WisvDataset
    from edgespec.learn.wisv.train import Groups, Instances, Split, TrainedHead, TrainSettings
    from edgespec.policies.semantic.head import DecisionHead


@dataclass(frozen=True, slots=True)
class FitConfig:
    """What ``train wisv`` trains (its flags): the data, where to write, the settings."""

    data: tuple[Path, ...]
    out_dir: Path
    settings: TrainSettings
    name: str | None = None
    digits: int = 6
    threads: int = 1
    command: str = ""
    labels: str = "base"
    """Which labels a rollout capture's rows train on (:mod:`edgespec.learn.wisv.union`)."""
    baseline: Path | None = None
    """Another head, evaluated on the same train and held-out instances (``baseline``)."""
    overwrite: bool = False
    """Replace a head of the same name in ``out_dir`` (else refused before training)."""


def head_provenance(head: Path) -> dict[str, str]:
    """What an acceptance table records of the head it was built from: the head file's name
    (beside the table) and its SHA-256, so a test can tell that the simulator's table and
    the runtime's head are one (``tests/learn/wisv/test_bundled_head.py``)."""
    return {"file": head.name, "sha256": hashlib.sha256(head.read_bytes()).hexdigest()}


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _load(config: FitConfig) -> tuple[WisvDataset, Groups, Split, Split]:
    """The datasets as one (:func:`edgespec.learn.wisv.union.union`), the groups, and
    the (training, held-out) episodes."""
    from edgespec.learn.wisv.dataset import WisvDataset
    from edgespec.learn.wisv.train import split_episodes
    from edgespec.learn.wisv.union import union

    if not config.data:
        raise UserInputError("--data: give at least one wisv-data file")
    check_given_once(config.data)
    parts = []
    for path in config.data:
        if path.is_dir():
            raise UserInputError(f"--data {path}: a folder, not a file (give a wisv-data .npz)")
        if not path.is_file():
            raise UserInputError(f"--data {path}: no such file")
        try:
            parts.append(WisvDataset.load(path))
            _require_finite(parts[-1])
        except (ValueError, OSError) as exc:
            raise UserInputError(f"--data {path}: {exc}") from exc
    check_one_target(config.data, parts)
    names = " ".join(f"--data {p}" for p in config.data)
    try:
        data, groups = union(parts, config.labels)
        train, held = split_episodes(data, config.settings.holdout, config.settings.seed, groups)
    except ValueError as exc:
        raise UserInputError(f"{names}: {exc}") from exc
    return data, groups, train, held


def _require_finite(data: WisvDataset) -> None:
    """A NaN or inf hidden state (or ROUGE-L F1) would train a NaN head: refused at load,
    naming the array, row and column (``draft_hidden[3, 7] is nan, ...``)."""
    from edgespec.policies.stop_drafting import require_finite

    arrays: dict[str, Any] = {
        "draft_hidden": data.draft_hidden,
        "target_hidden": data.target_hidden,
    }
    if data.similarity is not None:
        arrays["similarity"] = data.similarity
    for name, values in arrays.items():
        if not np.issubdtype(values.dtype, np.floating):
            raise ValueError(f"{name} must hold floating-point numbers, got {values.dtype}")
        require_finite(name, values)


def read_head(flag: str, path: Path) -> DecisionHead:
    """The decision head file ``flag`` names, built through the policy registry (kind
    ``head``, name ``wisv``, its ``path``) before any long work (training, model loading):
    a missing, malformed or non-finite one is a usage error naming both."""
    from edgespec.config import ConfigError, PolicySpec
    from edgespec.policies.registry import build_policy_at

    if not path.is_file():
        raise UserInputError(f"{flag} {path}: no such file")
    try:
        head: DecisionHead = build_policy_at(flag, "head", PolicySpec("wisv", {"path": str(path)}))
    except ConfigError as exc:  # named by its flag, not as a config field
        raise UserInputError(f"{flag}: {exc.message}") from exc
    return head


def _metrics(
    config: FitConfig,
    data: WisvDataset,
    split: tuple[Split, Split, Split],
    trained: TrainedHead,
    report: dict[str, Any],
) -> dict[str, Any]:
    settings = config.settings
    extra = {"validation": len(split[2])} if split[2] else {}
    return {
        "command": config.command,
        "trained": _now(),
        "data": str(config.data[0]) if len(config.data) == 1 else [str(p) for p in config.data],
        "dataset": data.summary(),
        "settings": {k: getattr(settings, k) for k in settings.__dataclass_fields__},
        "prompts": {"train": len(split[0]), "held_out": len(split[1]), **extra},
        "labels": config.labels,
        "positive_weight": round(trained.positive_weight, 4),
        "epochs_run": len(trained.losses),
        **({} if trained.best_epoch is None else {"best_epoch": trained.best_epoch}),
        "loss": {"first_epoch": trained.losses[0], "last_epoch": trained.losses[-1]},
        **report,
    }


def _check_training_set(config: FitConfig, train: Any, baseline: DecisionHead | None) -> None:
    """Something to learn from (both classes among the training targets: with one, the
    loss teaches nothing and an AUC is undefined), and a baseline head of the data's
    input width."""
    names = " ".join(f"--data {p}" for p in config.data)
    if train.target.sum() <= 0:
        raise UserInputError(f"{names}: no critical mismatch among the training prompts")
    if train.target.min() >= 1:
        raise UserInputError(f"{names}: every mismatch among the training prompts is critical")
    if baseline is not None and baseline.w1.shape[0] != train.x.shape[1]:
        raise UserInputError(
            f"--baseline-head {config.baseline}: takes {baseline.w1.shape[0]} inputs, the "
            f"data give {train.x.shape[1]}"
        )


def train_and_write(config: FitConfig) -> dict[str, Any]:
    """Relabel, train, evaluate on the held-out prompts and write ``NAME-head.json``,
    ``NAME-acceptance.json`` and ``NAME-metrics.json`` into ``config.out_dir``; the
    report (train and held-out metrics, reject shares) and the paths written."""
    import torch
    from rich.console import Console

    from edgespec.learn.progress import epoch_progress
    from edgespec.learn.wisv.evaluation import acceptance_table, evaluate
    from edgespec.learn.wisv.export import head_json, rounded_head, trained_pair
    from edgespec.learn.wisv.fit_flags import check_head_files, default_head_name
    from edgespec.learn.wisv.train import build_instances, train_head

    settings = config.settings
    baseline = None if config.baseline is None else read_head("--baseline-head", config.baseline)
    data, groups, train_eps, held_eps = _load(config)
    stem = (config.name or default_head_name(data.meta.get("target", "head"))) + settings.suffix
    check_head_files(config.out_dir, stem, config.overwrite)
    torch.set_num_threads(config.threads)
    relabel = settings.relabel
    train_eps, val_eps, validation = _validation(data, groups, train_eps, settings)
    train = build_instances(data, train_eps, settings.draws, settings.budget, settings.seed)
    held = build_instances(data, held_eps, settings.draws, settings.budget, settings.seed + 1)
    _check_training_set(config, train, baseline)
    start = time.perf_counter()
    widths = (data.draft_hidden.shape[1], data.target_hidden.shape[1])
    with epoch_progress(Console(stderr=True, markup=False), settings.epochs) as on_epoch:
        trained = _finite(lambda: train_head(train, *widths, settings, validation, on_epoch))
    train_s = time.perf_counter() - start
    saved = rounded_head(trained.head, config.digits)  # what the file holds, measured
    table = acceptance_table(saved, data, held_eps, settings.budget)
    report: dict[str, Any] = {
        "train": evaluate(saved, train),
        "held_out": evaluate(saved, held),
    }
    if validation is not None:
        report["validation"] = evaluate(saved, validation)
    if baseline is not None:
        report["baseline"] = {
            "train": evaluate(baseline, train),
            "held_out": evaluate(baseline, held),
        }
    metrics = _metrics(
        config, data, (train_eps, held_eps, val_eps), trained,
        {"train_s": round(train_s, 1), "report": report, "reject_share": table["reject_share"]},
    )  # fmt: skip
    metadata = {
        "command": metrics["command"],
        "trained": metrics["trained"],
        "relabelled": relabel,
        "budget": settings.budget,
        "settings": metrics["settings"],
        "held_out": {k: v if v is None else round(v, 4) for k, v in report["held_out"].items()},
        "inputs": "[h_d (draft post-norm) ; h_t (target post-norm) ; csi_features]",
    }
    pair = replace(saved, trained_for=trained_pair(data.meta))
    head = head_json(pair, None, metadata)  # rounded already
    paths = _write(config.out_dir, stem, head, table, metrics)
    return {"report": report, "reject_share": table["reject_share"], "paths": paths}


def _validation(
    data: WisvDataset, groups: Groups, train_eps: Split, settings: TrainSettings
) -> tuple[Split, Split, Instances | None]:
    """(training, validation episodes, validation instances): ``--validation``'s share of
    the training prompts set aside for early stopping, or none."""
    from edgespec.learn.wisv.train import build_instances, split_list

    if settings.validation <= 0:
        return train_eps, [], None
    try:
        train_eps, val_eps = split_list(train_eps, settings.validation, settings.seed + 2, groups)
    except ValueError as exc:  # one training prompt left: none to set aside and train on
        raise UserInputError(f"--validation {settings.validation:g}: no training prompt to set "
                             f"aside after --holdout ({exc}); capture more prompts, or give "
                             "--validation 0") from None  # fmt: skip
    validation = build_instances(data, val_eps, settings.draws, settings.budget, settings.seed + 3)
    if validation.base.min() == validation.base.max():
        raise UserInputError("--validation: the validation prompts hold one class only")
    return train_eps, val_eps, validation


def _finite(train: Callable[[], TrainedHead]) -> TrainedHead:
    """``train()``'s head, refused (nothing is written) when it diverged: a weight or an
    epoch's loss that is not a finite number."""
    try:
        trained = train()
    except ValueError as exc:  # the export (DecisionHead) refuses a non-finite weight
        raise UserInputError(
            f"training diverged: the head's {exc}; nothing written (try a lower --lr)"
        ) from exc
    for epoch, loss in enumerate(trained.losses):
        if not math.isfinite(loss):
            raise UserInputError(
                f"training diverged: the loss of epoch {epoch + 1} is {loss}; nothing written "
                "(try a lower --lr)"
            )
    return trained


def _write(
    out_dir: Path, stem: str, head: dict[str, Any], table: dict[str, Any], metrics: dict[str, Any]
) -> list[str]:
    """Write ``STEM-head.json``, ``-acceptance.json`` (naming the head it is of) and
    ``-metrics.json`` into ``out_dir``; their paths. All three are strict JSON: a NaN or
    inf in any is a ``ValueError`` before anything is written."""
    head_text = json.dumps(head, separators=(",", ":"), allow_nan=False) + "\n"
    metrics_text = json.dumps(metrics, indent=1, default=float, allow_nan=False) + "\n"
    json.dumps(table, allow_nan=False)  # checked now; written below with the head's digest
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {k: out_dir / f"{stem}-{k}.json" for k in ("head", "acceptance", "metrics")}
    write_text_atomically(paths["head"], head_text)
    table["head"] = head_provenance(paths["head"])  # the runtime's head this table is of
    write_text_atomically(paths["acceptance"], json.dumps(table, indent=1, allow_nan=False) + "\n")
    write_text_atomically(paths["metrics"], metrics_text)
    return [str(p) for p in paths.values()]
