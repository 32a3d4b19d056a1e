"""What the OpenAI endpoint learns from its verification servers as it starts (their
``Health``), so that a request they would refuse is refused before it waits for a worker:
the smallest context and draft-block limit (:func:`smallest_limit`), the SLO classes every
server admits (:func:`common_slo_classes`), the one model they serve
(:func:`check_one_model`); and the config's own window and SLO class checked against them
(:func:`learn`)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from edgespec.errors import UserInputError


@dataclass(frozen=True, slots=True)
class ServerFacts:
    """What the servers' Health says (``None``: none says): the target's context, the
    longest draft block, the SLO classes every one admits."""

    max_context_tokens: int | None
    max_draft_tokens: int | None
    slo_classes: frozenset[str] | None


def learn(config: Any, verifiers: tuple[Any, ...]) -> ServerFacts:
    """The servers' :class:`ServerFacts`, with the config's (``DrafterConfig``) default
    window (:func:`~edgespec.runtime.edge.block_limit.check_window_fits`) and SLO class
    checked against them: a :class:`~edgespec.config.ConfigError` at its field, since every
    request that gives neither would be refused."""
    from edgespec.config import ConfigError
    from edgespec.policies.registry import build_policy_at
    from edgespec.runtime.edge.block_limit import check_window_fits

    servers = config.servers
    facts = ServerFacts(smallest_limit(servers, verifiers, "max_context_tokens"),
                        smallest_limit(servers, verifiers, "max_draft_tokens"),
                        common_slo_classes(verifiers))  # fmt: skip
    window = build_policy_at("window", "window", config.window)
    check_window_fits(window, config.tree is not None, facts.max_draft_tokens)
    classes = facts.slo_classes
    if classes is not None and config.slo_class not in classes:
        raise ConfigError("slo_class", f"{config.slo_class!r} is not an SLO class of the "
                          f"server, which has {sorted(classes)}")  # fmt: skip
    return facts


def common_slo_classes(verifiers: tuple[Any, ...]) -> frozenset[str] | None:
    """The SLO classes every server that says admits (``None``: none says, or every one
    takes any class); a server that does not answer now is left out."""
    from edgespec.runtime.errors import RequestError

    common: frozenset[str] | None = None
    for verifier in verifiers:
        try:
            classes = verifier.slo_classes()
        except RequestError:
            continue
        if classes is not None:
            common = classes if common is None else common & classes
    return common


def smallest_limit(servers: tuple[str, ...], verifiers: tuple[Any, ...], what: str) -> int | None:
    """The smallest ``what`` (``max_context_tokens``, ``max_draft_tokens``: a client's
    method asking its server's Health) the servers report, ``None`` when none says: a
    request is held to what every server takes, as routing may send it to any. Servers
    that differ are told in one line (one target may be served with other limits, e.g.
    ``--llamacpp-context``); one that does not answer now is left out (it refuses beyond
    its own limit, in the same words, if a request goes there)."""
    from edgespec.runtime.errors import RequestError

    told: dict[str, int] = {}
    for address, verifier in zip(servers, verifiers, strict=True):
        try:
            limit = getattr(verifier, what)()
        except RequestError:
            continue
        if limit is not None:
            told[address] = int(limit)
    if len(set(told.values())) > 1:
        each = ", ".join(f"{address} {limit}" for address, limit in told.items())
        print(f"edgespec draft: the servers' {what} differ ({each}): the endpoint keeps to "
              f"{min(told.values())}, the smallest", file=sys.stderr)  # fmt: skip
    return min(told.values(), default=None)


def check_one_model(servers: tuple[str, ...], verifiers: tuple[Any, ...]) -> None:
    """Every server that answers serves one model, the same target name and vocabulary
    (the endpoint offers one model id, and routing may send a request to any): servers
    that differ are a :class:`UserInputError` naming each; one that does not answer now is
    left out."""
    from edgespec.runtime.errors import RequestError

    told: dict[str, tuple[str | None, int]] = {}
    for address, verifier in zip(servers, verifiers, strict=True):
        try:
            told[address] = (verifier.target_name(), verifier.vocab_size())
        except RequestError:
            continue
    if len(set(told.values())) > 1:
        each = ", ".join(f"{address} {name or 'unnamed'} of {vocab} tokens"
                         for address, (name, vocab) in told.items())  # fmt: skip
        raise UserInputError(f"--server: the servers serve different targets ({each}); the "
                             "endpoint serves one model: give servers of one target")  # fmt: skip
