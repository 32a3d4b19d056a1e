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


def limit_told(limit: int) -> str:
    """How a block over the server's ``limit`` is refused, after the γ it names."""
    return f"exceeds the server's max_draft_tokens {limit}, the longest block it verifies"


def check_gamma_fits(param: str, gamma: int, limit: int | None) -> None:
    """A :class:`ConfigError` at the window parameter ``param`` (``window.params.gamma``,
    named by ``--gamma`` when it gave it) when its ``gamma`` is over ``limit``."""
    if limit is not None and gamma > limit:
        raise ConfigError(f"window.params.{param}", f"{gamma} {limit_told(limit)}")
