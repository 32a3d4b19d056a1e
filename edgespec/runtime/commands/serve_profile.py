"""``edgespec serve --profile``'s checks of the profile against what it serves, before
the target loads: a drafter's profile (``role: draft``) or another model's (a profile
file whose ``model:`` is not ``--target``, :func:`edgespec.models.registry.same_model`)
is refused (:func:`check_profile`); one used beyond the batch size or context it measured
is said once the target is loaded (:func:`profile_range_warning`, of the target's
context). A bundled profile (a paper's
measured coefficients, such as ``a100-qwen3-32b``) is a reference estimator, given by
name on purpose: its model is not checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgespec.config import ConfigError, at_field
from edgespec.hardware.profile_info import check_role, profile_info, range_warning
from edgespec.hardware.profile_source import PROFILE_SUFFIXES
from edgespec.models.registry import same_model

FIELD = "batching.params.profile"
"""Where the server's config holds the profile (``--profile`` sets it)."""


def check_profile(config: Any) -> None:
    """Refuse ``config``'s wisp profile priced for another role or model, before the target
    loads. A profile that does not record its role or model is not checked for it."""
    profile = config.batching.params.get("profile") if config.batching.name == "wisp" else None
    if profile is None:
        return
    info = profile_info(str(profile))
    try:
        check_role(info, "target", "a server's wisp batching")
    except ConfigError as exc:
        raise at_field(exc, FIELD, info.where) from exc
    bundled = Path(str(profile)).suffix not in PROFILE_SUFFIXES
    if not bundled and info.model is not None and not same_model(info.model, config.target):
        raise ConfigError(
            FIELD,
            f"{info.where}.model: is {info.model}, not the served target {config.target}: "
            "another model's profile mis-prices every batch; profile this target "
            f"(edgespec profile --target {config.target}), or, to use these times anyway, "
            "give its coefficients instead (--set batching.params.a_s=... with b_compute_s, "
            "b_read_s and c_s, without --profile)",
        )


def profile_range_warning(config: Any, target_context_tokens: int) -> str | None:
    """The line saying ``config``'s wisp profile is used beyond the batch size or context
    it measured, once the target is loaded: the longest context a request can reach is the
    target's (``target_context_tokens``), or the KV budget when that is smaller."""
    profile = config.batching.params.get("profile") if config.batching.name == "wisp" else None
    if profile is None:
        return None
    context = min(target_context_tokens, config.kv_budget_tokens)
    return range_warning(profile_info(str(profile)), config.max_batch_size, context)
