"""A window policy against the server's ``max_draft_tokens`` (the longest block it
verifies), before a round is drafted: a policy whose rounds may draft more is refused up
front (the server refused it only once a round reached it, tokens already streamed)."""

from __future__ import annotations

from typing import Any

from edgespec.config import ConfigError
from edgespec.policies.window import GammaBound, gamma_bounds


def block_over_limit(window: Any, tree: bool, limit: int | None) -> GammaBound | None:
    """The first γ bound of ``window`` (:func:`~edgespec.policies.window.gamma_bounds`)
    over ``limit``; ``None`` when none is, when the server does not say its limit, or for a
    policy of unknown type. With a token tree (``tree``) a distributed round's block is the
    tree, capped at the limit on its own: only fused rounds count."""
    bounds = gamma_bounds(window)
    if limit is None or bounds is None:
        return None
    return next((b for b in bounds if b.gamma > limit and (b.fused or not tree)), None)


def check_window_fits(window: Any, tree: bool, limit: int | None) -> None:
    """:func:`block_over_limit` as a :class:`ConfigError` (:func:`check_gamma_fits`)."""
    over = block_over_limit(window, tree, limit)
    if over is not None and not over.settable:
        raise ConfigError("window.name", f"{type(window).__name__}'s rounds reach its fixed "
                          f"{over.param} {over.gamma}, over the server's max_draft_tokens "
                          f"{limit}, the longest block it verifies: choose another window "
                          "policy, or a server that verifies longer blocks")  # fmt: skip
    if over is not None:
        check_gamma_fits(over.param, over.gamma, limit)


NO_FUSED_ROUNDS = "the server runs no fused rounds (it was started without --draft)"
"""Why a run whose rounds may go fused cannot run on a server whose Health says so."""


def fuses_on_a_server_without(window: Any, runs_fused_rounds: bool | None) -> bool:
    """Whether ``window``'s rounds may go fused (:func:`~edgespec.policies.fusing.fusing`,
    AWC's and a fused static window's) while the server says it runs none; a server that
    does not say (``None``) is not held to it (it refuses the first fused round)."""
    from edgespec.policies.fusing import fusing

    return runs_fused_rounds is False and fusing(window, "distributed") is True


def check_fused_rounds(window: Any, runs_fused_rounds: bool | None) -> None:
    """:func:`fuses_on_a_server_without` as a :class:`ConfigError` at ``window.name``,
    before a round is drafted (the refusal came at the first fused round, text already
    printed)."""
    if fuses_on_a_server_without(window, runs_fused_rounds):
        raise ConfigError("window.name", f"{type(window).__name__}'s rounds may go fused, and "
                          f"{NO_FUSED_ROUNDS}: choose a window policy that stays distributed "
                          "(static, dynamic), or a server started with --draft")  # fmt: skip


def limit_told(limit: int) -> str:
    """How a block over the server's ``limit`` is refused, after the γ it names."""
    return f"exceeds the server's max_draft_tokens {limit}, the longest block it verifies"


def check_gamma_fits(param: str, gamma: int, limit: int | None) -> None:
    """A :class:`ConfigError` at the window parameter ``param`` (``window.params.gamma``,
    named by ``--gamma`` when it gave it) when its ``gamma`` is over ``limit``."""
    if limit is not None and gamma > limit:
        raise ConfigError(f"window.params.{param}", f"{gamma} {limit_told(limit)}")
