"""What the OpenAI endpoint learns from its verification servers as it starts (their
``Health``, asked once each: :func:`described`), so that a request they would refuse is
refused before it waits for a worker: the smallest context and draft-block limit
(:func:`smallest_limit`), the SLO classes every server admits (:func:`common_slo_classes`),
the one model they serve (:func:`check_one_model`); and the config's own window and SLO
class checked against them (:func:`learn`)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from edgespec.errors import UserInputError
from edgespec.runtime.messages import ServerHealth


@dataclass(frozen=True, slots=True)
class ServerFacts:
    """What the servers' Health says (``None``: none says): the target's context, the
    longest draft block, the SLO classes every one admits, the target's name, whether
    they run fused rounds (``False``: one says it runs none, where routing may send a
    request)."""

    max_context_tokens: int | None
    max_draft_tokens: int | None
    slo_classes: frozenset[str] | None
    target_name: str | None = None
    runs_fused_rounds: bool | None = None


def described(servers: tuple[str, ...], verifiers: tuple[Any, ...]) -> dict[str, ServerHealth]:
    """Each server's Health (one call each; ``verifiers`` are their clients, in the order
    of ``servers``); one that does not answer now is left out (it refuses beyond its own
    limits, in the same words, if a request goes there)."""
    from edgespec.runtime.errors import RequestError

    told: dict[str, ServerHealth] = {}
    for address, verifier in zip(servers, verifiers, strict=True):
        try:
            told[address] = verifier.describe()
        except RequestError:
            continue
    return told


def learn(config: Any, told: dict[str, ServerHealth], drafts: bool = True) -> ServerFacts:
    """The :class:`ServerFacts` of the servers' Health (``told``, by :func:`described`),
    with the config's (``DrafterConfig``) default window
    (:func:`~edgespec.runtime.edge.block_limit.check_window_fits`, and where the endpoint
    ``drafts``, :func:`~edgespec.runtime.edge.block_limit.check_fused_rounds`) and SLO
    class checked against them: a :class:`~edgespec.config.ConfigError` at its field,
    since every request that gives neither would be refused."""
    from edgespec.config import ConfigError
    from edgespec.policies.registry import build_policy_at
    from edgespec.runtime.edge.block_limit import check_fused_rounds, check_window_fits

    names = {health.target_name for health in told.values()}
    fused = {h.runs_fused_rounds for h in told.values() if h.runs_fused_rounds is not None}
    facts = ServerFacts(smallest_limit(told, "max_context_tokens"),
                        smallest_limit(told, "max_draft_tokens"), common_slo_classes(told),
                        names.pop() if len(names) == 1 else None,
                        min(fused) if fused else None)  # fmt: skip
    window = build_policy_at("window", "window", config.window)
    check_window_fits(window, config.tree is not None, facts.max_draft_tokens)
    if drafts:
        check_fused_rounds(window, facts.runs_fused_rounds)
    classes = facts.slo_classes
    if classes is not None and config.slo_class not in classes:
        raise ConfigError("slo_class", f"{config.slo_class!r} is not an SLO class of the "
                          f"server, which has {sorted(classes)}")  # fmt: skip
    return facts


def common_slo_classes(told: dict[str, ServerHealth]) -> frozenset[str] | None:
    """The SLO classes every server that says admits (``None``: none says, or every one
    takes any class)."""
    common: frozenset[str] | None = None
    for health in told.values():
        if health.slo_classes is not None:
            common = health.slo_classes if common is None else common & health.slo_classes
    return common


def smallest_limit(told: dict[str, ServerHealth], what: str) -> int | None:
    """The smallest ``what`` (``max_context_tokens``, ``max_draft_tokens``) the servers
    report, ``None`` when none says: a request is held to what every server takes, as
    routing may send it to any. Servers that differ are told in one line (one target may be
    served with other limits, e.g. ``--llamacpp-context``)."""
    limits = {address: getattr(health, what) for address, health in told.items()}
    said = {address: int(limit) for address, limit in limits.items() if limit is not None}
    if len(set(said.values())) > 1:
        each = ", ".join(f"{address} {limit}" for address, limit in said.items())
        print(f"edgespec draft: the servers' {what} differ ({each}): the endpoint keeps to "
              f"{min(said.values())}, the smallest", file=sys.stderr)  # fmt: skip
    return min(said.values(), default=None)


ONE_MODEL_WHY = "the endpoint serves one model"
"""Why the endpoint's servers must serve one target (its one model id)."""


def check_one_model(told: dict[str, ServerHealth], why: str = ONE_MODEL_WHY) -> None:
    """Every server that answered serves one model, the same target name and vocabulary
    (the endpoint offers one model id, and routing may send a request to any; ``why``:
    another command's reason, ``edgespec draft --prompt``'s): servers that differ are a
    :class:`UserInputError` naming each."""
    models = {address: (health.target_name, health.vocab_size) for address, health in told.items()}
    if len(set(models.values())) > 1:
        each = ", ".join(f"{address} {name or 'unnamed'} of {vocab} tokens"
                         for address, (name, vocab) in models.items())  # fmt: skip
        raise UserInputError(f"--server: the servers serve different targets ({each}); "
                             f"{why}: give servers of one target")  # fmt: skip
