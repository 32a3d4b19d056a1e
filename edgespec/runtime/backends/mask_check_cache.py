"""The transformers target's load-time probes (attention masks, then batch invariance:
:mod:`edgespec.runtime.backends.exactness`), remembered.

:class:`~edgespec.runtime.backends.transformers_backend.TransformersTarget` refuses a model
unless a padded probe batch reproduces the model's own logits; for Gemma 3 (a 512-token
window) the probes forward about 1,500 tokens and decode 518 one at a time, tens of seconds
on a small CPU. Their outcome depends only on the weights, the model's configuration, the
dtype and device (a CPU's instruction set: AVX2, AVX-512), the torch threads, the numerics,
the torch and transformers versions and edgespec's masking and batch-invariant code, so a
passed probe is recorded (with what the batch-invariance check found, for the lossy mode's
report) under a key made of exactly those (the weight files by path, size and modification
time; the masking code by the hash of its source) in ``<cache>/checks/attention-masks/``,
and a later load with the same key skips it. Anything that changes the key probes again; a
failed probe is never recorded (it refuses the model, every time)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
import transformers

from edgespec.runtime.backends import (
    attention_mask,
    batch_invariant,
    exactness,
    transformers_backend,
)
from edgespec.runtime.backends.exactness import Inexactness
from edgespec.runtime.backends.transformers_backend import Numerics, TransformersTarget


@dataclass(frozen=True, slots=True)
class CachedTarget:
    """A loaded target and whether its mask probe ran now (``False``: a recorded pass);
    ``unrecorded``: why a pass was not recorded (a cache that cannot be written: a
    read-only home, a container image), the target served all the same."""

    target: TransformersTarget
    probed: bool
    unrecorded: str | None = None


def probe_key(model: Any, weight_files: Sequence[Path], numerics: str = "exact") -> dict[str, Any]:
    """Everything the probe's outcome depends on, as JSON-able values."""
    param = next(model.parameters())
    code = hashlib.sha256()
    for module in (attention_mask, batch_invariant, exactness, transformers_backend):
        code.update(Path(str(module.__file__)).read_bytes())
    files = []
    for path in sorted(Path(p).resolve() for p in weight_files):
        stat = path.stat()
        files.append([str(path), stat.st_size, stat.st_mtime_ns])
    return {
        "files": files,
        "config": model.config.to_json_string(use_diff=False),
        "dtype": str(param.dtype),
        "device": str(param.device),
        "numerics": numerics,
        "attention": getattr(model.config, "_attn_implementation", None),
        # the kernels MKL and torch pick depend on the CPU's instruction set and the threads
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "edgespec_masking_code": code.hexdigest(),
    }


def _record_path(cache: Path, key: dict[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
    return cache / "checks" / "attention-masks" / f"{digest}.json"


def _record(key: dict[str, Any], cache: Path) -> dict[str, Any] | None:
    """The pass recorded under ``key``, or ``None`` (no record, or an unreadable one:
    probe again and rewrite it)."""
    try:
        record = json.loads(_record_path(cache, key).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("key") == key else None


def _inexactness(record: dict[str, Any]) -> Inexactness | None:
    found = record.get("inexactness")
    return None if not isinstance(found, dict) else Inexactness(**found)


def has_recorded_pass(
    model: Any, weight_files: Sequence[Path], cache: Path, numerics: str = "exact"
) -> bool:
    """Whether a pass of this model's probe is recorded in ``cache`` under its
    :func:`probe_key` (never for a model without weight files: one built in memory)."""
    return (
        bool(weight_files) and _record(probe_key(model, weight_files, numerics), cache) is not None
    )


def _quiet(probing: str | None) -> None:
    """No one is told whether the probe runs."""


def changed_since(key: dict[str, Any], cache: Path) -> str:
    """Why no pass is recorded under ``key``: what differs from the nearest pass recorded
    for the same weight files and numerics (``the masking code``, ``threads 2 (recorded:
    1)``, ...), or that none is recorded for them."""
    nearest: list[str] | None = None
    for path in (cache / "checks" / "attention-masks").glob("*.json"):
        try:
            recorded = json.loads(path.read_text()).get("key")
        except (OSError, ValueError, AttributeError):
            continue
        if not isinstance(recorded, dict) or any(
            recorded.get(f) != key[f] for f in ("files", "numerics")
        ):
            continue
        differ = [_differs(f, key[f], recorded.get(f)) for f in key if recorded.get(f) != key[f]]
        if nearest is None or len(differ) < len(nearest):
            nearest = differ
    if nearest is None:
        return "no pass recorded for these weight files"
    return "changed since the last recorded pass: " + ", ".join(nearest)


def _differs(field: str, now: Any, then: Any) -> str:
    if field == "edgespec_masking_code":
        return "edgespec's masking code"
    if field == "config":
        return "the model's configuration"
    return f"{field} {now} (recorded: {then})"


def load_checked_target(
    model: Any,
    weight_files: Sequence[Path],
    cache: Path,
    announce: Callable[[str | None], None] = _quiet,
    numerics: Numerics = "exact",
    **options: Any,
) -> CachedTarget:
    """``TransformersTarget(model, numerics=numerics, **options)``, its probes skipped when
    :func:`has_recorded_pass` (the lossy mode's inexactness read back from the record),
    else run and (when they pass) recorded; ``announce`` hears whether the probes are about
    to run: ``None`` when they are not, else why (:func:`changed_since`; empty for a model
    built in memory, without ``weight_files``, whose probes always run)."""
    key = probe_key(model, weight_files, numerics) if weight_files else None
    found = None if key is None else _record(key, cache)
    if found is not None:
        announce(None)
    else:
        announce("" if key is None else changed_since(key, cache))
    target = TransformersTarget(model, check_masks=found is None, numerics=numerics, **options)
    if found is not None:
        target.inexactness = _inexactness(found)
    elif key is not None:
        inexact = None if target.inexactness is None else asdict(target.inexactness)
        record = _record_path(cache, key)
        text = json.dumps({"key": key, "passed": True, "inexactness": inexact}, indent=1)
        tmp = record.with_suffix(f".tmp{os.getpid()}")
        try:
            record.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(text)
            tmp.replace(record)
        except OSError as exc:  # it passed: serve it, and say the next start probes again
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            why = f"{exc.filename or record.parent}: {exc.strerror or exc}"
            return CachedTarget(target, probed=True, unrecorded=why)
    return CachedTarget(target, probed=found is None)


def checked_target(model: Any, weight_files: Sequence[Path], **options: Any) -> TransformersTarget:
    """:func:`load_checked_target` in the project's cache folder
    (:func:`edgespec.bundled_gguf.cache_dir`), quietly: what a command that loads a
    model by name builds its target with, so the probes run once per weights, not per run."""
    from edgespec.bundled_gguf import cache_dir

    return load_checked_target(model, weight_files, cache_dir(), **options).target
