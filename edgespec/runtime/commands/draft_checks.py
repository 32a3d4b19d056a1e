"""``edgespec draft``'s checks of its flags and config against the mode, the window, the
server's draft-block limit and the models, each before anything slow happens; where the
draft is placed (``--device``)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from edgespec.runtime.messages import ServerHealth


def check_modes(args: argparse.Namespace, config: Any, stops: bool) -> None:
    """What needs a distributed run (a stop predictor when ``stops``, ``--compare``'s
    other half, an emulated link, semantic verification) or no fused one (``--logprobs``),
    refused in another mode as a :class:`~edgespec.config.ConfigError` at its field."""
    from edgespec.config import ConfigError
    from edgespec.runtime.wire.emulated_link import check_link_mode

    if stops and args.mode != "distributed":
        raise ConfigError("stop_predictor", f"needs --mode distributed, got {args.mode}")
    identical = "--compare checks token-identical outputs"
    if args.compare and args.mode == "centralized":
        beside = "a distributed run (the default) or a fused one (--mode fused)"
        raise ConfigError("mode", f"--compare runs centralized beside {beside}: drop --mode")
    check_link_mode(config, args.mode)
    if config.verification == "semantic" and args.mode != "distributed":
        raise ConfigError("verification", f"semantic needs --mode distributed, got {args.mode}")
    if config.verification == "semantic" and args.compare:
        raise ConfigError("verification", f"{identical}; semantic is lossy")
    if config.logprobs is not None and (args.mode == "fused" or args.compare):
        raise ConfigError("logprobs", "the log-probabilities come with a distributed or "
                          "centralized run's tokens (no --compare): a fused run returns "
                          "none")  # fmt: skip


def check_tree_depth(tree: str | None, window: Any, gamma_by_flag: bool = False) -> None:
    """A ``--tree`` with more depths than a round can draft (a static window's γ, a dynamic
    one's ``max_gamma``) is a :class:`~edgespec.config.ConfigError`: a round drafts at most
    γ deep, so the extra depths would never be drafted. γ is named where it came from:
    ``--gamma`` when ``gamma_by_flag``, else the config field (``--set``, a config file, the
    default); the tree by its flag when a flag set it (``flag_message``), else its field."""
    from edgespec.config import ConfigError
    from edgespec.core.tree import parse_branching
    from edgespec.policies.window import DynamicWindow, StaticWindow

    if tree is None:
        return
    if isinstance(window, StaticWindow):
        deepest, what = window.gamma, "--gamma" if gamma_by_flag else "window.params.gamma"
    elif isinstance(window, DynamicWindow):
        deepest, what = window.max_gamma, "the dynamic window's max_gamma"
    else:
        return
    depths = len(parse_branching(tree))
    if depths > deepest:
        problem = f"has {depths} depths, more than {what} {deepest}"
        raise ConfigError("tree", f"{tree} {problem}", flag_message=f"--tree {tree} {problem}")


def check_blocks(config: Any, window: Any, mode: str, health: ServerHealth) -> None:
    """A round's block within the server's ``max_draft_tokens`` (``None``: it does not
    say), checked once the server is reached: ``--mode fused``'s γ, a distributed run's
    window (:func:`~edgespec.runtime.edge.block_limit.check_window_fits`); a centralized
    run drafts nothing. A :class:`~edgespec.config.ConfigError` at the window parameter
    (the server refused the first round that reached it). Fused rounds (``--mode fused``,
    a window that may fuse) on a server whose Health says it runs none are refused too."""
    from edgespec.errors import UserInputError
    from edgespec.runtime.commands.draft_run import fused_mode_gamma
    from edgespec.runtime.edge.block_limit import (
        NO_FUSED_ROUNDS,
        check_fused_rounds,
        check_gamma_fits,
        check_window_fits,
    )

    limit = health.max_draft_tokens
    if mode == "fused" and health.runs_fused_rounds is False:
        raise UserInputError(f"--mode fused: {NO_FUSED_ROUNDS}")
    if mode == "fused":
        check_gamma_fits("gamma", fused_mode_gamma(config), limit)
    elif mode == "distributed":
        check_window_fits(window, config.tree is not None, limit)
        check_fused_rounds(window, health.runs_fused_rounds)


def semantic_notes(config: Any, health: ServerHealth) -> list[str]:
    """What a semantic run is told of the threshold, checked once the server is reached:
    the shipped default's measured agreement (none given) or the agreement measured at a
    threshold above it, each only when the server serves the head that was measured (its
    Health's SHA-256, :func:`~edgespec.policies.semantic.agreement.measured_head`); the
    shipped default from a server serving another head, or naming none, is a
    :class:`~edgespec.config.ConfigError` asking for a threshold."""
    from edgespec.config import ConfigError
    from edgespec.policies.semantic.agreement import (
        agreement_note,
        bundled_pair,
        default_note,
        load_agreement,
        measured_head,
        unmeasured_default,
    )

    if config.verification != "semantic":
        return []
    table = load_agreement()
    measured = measured_head(table, health.semantic_head_sha256)
    if config.threshold is None and table is not None:  # the default: the bundled draft's
        if not measured:
            served = health.semantic_head_sha256
            message = unmeasured_default(table, served, "threshold")
            flag_message = unmeasured_default(table, served, "--threshold")
            raise ConfigError("verification", message, flag_message=flag_message)
        return [default_note(table)]
    if not measured or not bundled_pair(config.draft) or table is None:
        return []
    note = agreement_note(config.threshold, table)
    return [] if note is None else [note]


def draft_placement(args: argparse.Namespace) -> Any:
    """``--device``/``--dtype`` of the draft model (a GPU this machine lacks fails here,
    before the server is reached); a GPU with ``--backend llamacpp`` is a
    :class:`~edgespec.errors.UserInputError` (llama.cpp's draft runs on the CPU)."""
    from edgespec.errors import UserInputError
    from edgespec.models.devices import device_placement

    if args.backend == "llamacpp" and args.device not in (None, "cpu"):
        raise UserInputError(f"--device {args.device} is for --backend transformers")
    return device_placement(args)


def check_draft_name(draft: str | None) -> None:
    """The draft model (``--draft``, or the config's ``draft``) known or found before the
    server is reached: an unknown name, a missing path, a folder without ``config.json``
    or a cut-off save is a config error at field ``draft``, which names the flag that set
    it (``--draft /x: model directory '/x' has no config.json ...``), not the registry's
    bare line. Prompt lookup (``ngram``) and no draft need nothing."""
    from edgespec.config import ConfigError
    from edgespec.models.registry import ModelNotFoundError, resolve_model

    if draft is None or draft == "ngram":
        return
    try:
        resolve_model(draft)
    except ModelNotFoundError as exc:
        raise ConfigError("draft", str(exc)) from None


def check_stop_ids(stop_token_ids: Sequence[int], vocab_size: int) -> None:
    """``--stop-token-ids`` within the server's vocabulary, checked once it is reached and
    before the draft loads (the server refused one only at the first open, after it)."""
    from edgespec.errors import UserInputError

    outside = next((t for t in stop_token_ids if not 0 <= t < vocab_size), None)
    if outside is not None:
        raise UserInputError(f"--stop-token-ids: {outside} is outside the server's vocabulary "
                             f"[0, {vocab_size})")  # fmt: skip
