"""The transformers target's load-time attention-mask probe, remembered.

:class:`~edgespec.runtime.backends.transformers_backend.TransformersTarget` refuses a model
unless a padded probe batch reproduces the model's own logits; for Gemma 3 (a 512-token
window) the probe forwards about 1,500 tokens, tens of seconds on a small CPU. Its outcome
depends only on the weights, the model's configuration, the dtype and device, the torch
and transformers versions and edgespec's masking code, so a passed probe is recorded under
a key made of exactly those (the weight files by path, size and modification time; the
masking code by the hash of its source) in ``<cache>/checks/attention-masks/``, and a later
load with the same key skips it. Anything that changes the key probes again; a failed probe
is never recorded (it refuses the model, every time)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import transformers

from edgespec.runtime.backends import attention_mask, transformers_backend
from edgespec.runtime.backends.transformers_backend import TransformersTarget


@dataclass(frozen=True, slots=True)
class CachedTarget:
    """A loaded target and whether its mask probe ran now (``False``: a recorded pass)."""

    target: TransformersTarget
    probed: bool


def probe_key(model: Any, weight_files: Sequence[Path]) -> dict[str, Any]:
    """Everything the probe's outcome depends on, as JSON-able values."""
    param = next(model.parameters())
    code = hashlib.sha256()
    for module in (attention_mask, transformers_backend):
        code.update(Path(str(module.__file__)).read_bytes())
    files = []
    for path in sorted(Path(p).resolve() for p in weight_files):
        stat = path.stat()
        files.append([str(path), stat.st_size, stat.st_mtime_ns])
    return {
        "files": files,
        "config": model.config.to_json_string(use_diff=False),
        "dtype": str(param.dtype),
        "device": param.device.type,
        "attention": getattr(model.config, "_attn_implementation", None),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "edgespec_masking_code": code.hexdigest(),
    }


def _record_path(cache: Path, key: dict[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
    return cache / "checks" / "attention-masks" / f"{digest}.json"


def _recorded(key: dict[str, Any], cache: Path) -> bool:
    try:
        return bool(json.loads(_record_path(cache, key).read_text()).get("key") == key)
    except (OSError, ValueError):
        return False  # no record, or an unreadable one: probe again and rewrite it


def has_recorded_pass(model: Any, weight_files: Sequence[Path], cache: Path) -> bool:
    """Whether a pass of this model's probe is recorded in ``cache`` under its
    :func:`probe_key` (never for a model without weight files: one built in memory)."""
    return bool(weight_files) and _recorded(probe_key(model, weight_files), cache)


def _quiet(probing: bool) -> None:
    """No one is told whether the probe runs."""


def load_checked_target(
    model: Any,
    weight_files: Sequence[Path],
    cache: Path,
    announce: Callable[[bool], None] = _quiet,
    **options: Any,
) -> CachedTarget:
    """``TransformersTarget(model, **options)``, its mask probe skipped when
    :func:`has_recorded_pass`, else run and (when it passes) recorded; ``announce`` hears
    whether the probe is about to run. Without ``weight_files`` (a model built in memory)
    the probe always runs."""
    key = probe_key(model, weight_files) if weight_files else None
    probing = key is None or not _recorded(key, cache)
    announce(probing)
    target = TransformersTarget(model, check_masks=probing, **options)
    if key is not None and probing:
        record = _record_path(cache, key)
        record.parent.mkdir(parents=True, exist_ok=True)
        tmp = record.with_suffix(f".tmp{id(target)}")
        tmp.write_text(json.dumps({"key": key, "passed": True}, indent=1))
        tmp.replace(record)
    return CachedTarget(target, probed=probing)
