"""What ``edgespec serve`` builds around its target model: the checks that fail before
anything loads, the decision head and the verification rules it allows, the co-located
draft, and the verification service over the loaded target."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any


def check_before_loading(config: Any, draft_name: str | None) -> None:
    """An address the server cannot listen on, a bad model name or path, or a GPU this
    machine does not have (``device``) fails before anything loads; the open-file limit is
    raised for ``max_connections`` (process-wide: the command's to change, before the port is
    bound; a hard limit without room fails here). ``--threads`` and ``--cpus`` were applied
    before (:func:`edgespec.runtime.commands.cpus.apply_cpus_and_threads`)."""
    from edgespec.models.devices import check_device_available
    from edgespec.models.registry import resolve_model
    from edgespec.runtime.wire.grpc_limits import ensure_fd_room
    from edgespec.runtime.wire.ports import PortInUseError, ensure_port_free

    check_device_available(config.device)
    ensure_port_free(config.host, config.port)
    ensure_fd_room(config.max_connections)
    if config.prometheus_port is not None:
        try:
            ensure_port_free(config.host, config.prometheus_port)
        except PortInUseError as exc:
            where = f"--prometheus-port {config.prometheus_port}"
            raise PortInUseError(f"{where}: port in use (on {config.host})") from exc
    resolve_model(config.target)
    if draft_name not in (None, "ngram"):
        resolve_model(draft_name)


def semantic_head(
    config: Any, warn: Callable[[str], None] | None = None, draft: str | None = None
) -> Any:
    """The decision head ``semantic_head`` names (``None`` without one), built through the
    policy registry (kind ``head``, name ``wisv``, its ``path``) before the model loads; a
    file that is not a head, or a head trained for another target than ``target``, or for
    another draft than the server's own ``draft`` (its fused rounds' hidden states; compared
    as the models the names resolve to), is a :class:`ConfigError` at ``semantic_head``. A
    head that records no target (written before heads recorded their pair) is served;
    ``warn`` is told that it cannot be checked."""
    from edgespec.config import ConfigError, PolicySpec
    from edgespec.models.registry import same_model
    from edgespec.policies.registry import build_policy_at
    from edgespec.policies.semantic.bundled import bundled_pair
    from edgespec.policies.semantic.csi import csi_count_problem

    if config.semantic_head is None:
        return None
    spec = PolicySpec("wisv", {"path": str(config.semantic_head)})
    try:
        head = build_policy_at("semantic_head", "head", spec)
    except ConfigError as exc:  # the field is the file's name, not a policy spec
        raise ConfigError("semantic_head", exc.message) from None
    if problem := csi_count_problem(head.num_csi):  # before the target loads, not after
        raise ConfigError("semantic_head", f"{config.semantic_head}: {problem}")
    if head.trained_for is None:
        head = dataclasses.replace(head, trained_for=bundled_pair(config.semantic_head))
    if head.trained_for is None:
        if warn is not None:
            warn(
                f"warning: --semantic-head {config.semantic_head} does not record the target "
                f"it was trained for, so it cannot be checked against the target {config.target}"
            )
        return head
    recorded = head.trained_for.target
    if not same_model(recorded, config.target):
        raise ConfigError(
            "semantic_head",
            f"{config.semantic_head} was trained for target {recorded}, not the served target "
            f"{config.target}: give a head trained for this target",
        )
    trained_draft = head.trained_for.draft
    if (
        draft not in (None, "ngram")
        and trained_draft is not None
        and not same_model(trained_draft, draft)
    ):
        raise ConfigError(
            "semantic_head",
            f"{config.semantic_head} was trained for draft {trained_draft}, not the "
            f"server's --draft {draft}: its fused rounds would judge another draft's "
            "hidden states; give a head trained for this pair",
        )
    return head


def semantic_rules_for(config: Any, head: Any, model: Any, vocab_size: int | None = None) -> Any:
    """The verification rules the server serves: exact, plus semantic with ``head`` (its
    widths checked against the target ``model``'s hidden size, or ``model`` itself when it
    is that size, as on llama.cpp; the target vocabulary it records, if any, against the
    target's ``vocab_size``); a mismatch is a :class:`ConfigError`."""
    from edgespec.config import ConfigError
    from edgespec.runtime.server.semantic import semantic_rules
    from edgespec.runtime.server.verification import EXACT_RULES

    if head is None:
        return EXACT_RULES
    trained = None if head.trained_for is None else head.trained_for.target_vocab_size
    if trained is not None and vocab_size is not None and trained != vocab_size:
        raise ConfigError(
            "semantic_head",
            f"{config.semantic_head} was trained for a target of {trained:,} tokens, the "
            f"target has {vocab_size:,}: give a head trained for this target",
        )
    width = model if isinstance(model, int) else int(model.config.get_text_config().hidden_size)
    thresholds = config.semantic_thresholds or None
    file = config.semantic_head  # its SHA-256 for Health ("": a head given in process)
    digest = "" if file is None else hashlib.sha256(Path(file).read_bytes()).hexdigest()
    try:
        return semantic_rules(head, thresholds, target_hidden_size=width, head_sha256=digest)
    except ValueError as exc:
        raise ConfigError("semantic_head", str(exc)) from None


def build_service(
    config: Any,
    policy: Any,
    target: Any,
    head: Any,
    draft_name: str | None,
    window: Any,
    round_log: Any,
    verbose: bool,
    say: Callable[[str], None],
    log: Callable[[str], None],
) -> Any:
    """The verification service over the loaded target: its engine (the verification
    rules, the sessions the backend can hold) and the co-located draft, if any; a semantic
    head on a target whose hidden-state passes are refused (``hidden_state_problem``: a
    scaled head) is a :class:`ConfigError` at ``semantic_head``, not a refusal per session."""
    from edgespec.config import ConfigError
    from edgespec.runtime.server.engine import VerificationEngine
    from edgespec.runtime.server.service import VerificationService

    backend = target.backend
    if getattr(backend, "inexactness", None) is not None:
        log(f"LOSSY: batched logits differ from one-at-a-time ones ({backend.inexactness})")
    rules = semantic_rules_for(config, head, target.hidden_size, backend.vocab_size)
    if head is not None and (problem := getattr(backend, "hidden_state_problem", None)):
        raise ConfigError("semantic_head", f"the semantic rule reads hidden states: {problem}")
    max_sessions = config.max_sessions
    if target.max_sessions is not None and max_sessions > target.max_sessions:
        max_sessions = target.max_sessions
        log(f"max_sessions {config.max_sessions} capped to the {max_sessions} llama.cpp sequences")
    engine = VerificationEngine(
        backend,
        config.kv_budget_tokens,
        max_sessions,
        rules=rules,
        prefix_cache=config.prefix_cache,
        prefill_part_tokens=config.prefill_part_tokens,
    )
    drafts = _draft_factory(draft_name, backend.vocab_size, verbose, say, config.placement())
    return VerificationService(
        engine, config, policy, drafts, window=window, round_log=round_log, log=log
    )


def _draft_factory(
    draft_name: str | None,
    vocab_size: int,
    verbose: bool,
    say: Callable[[str], None],
    placement: Any,
) -> Callable[[], Any] | None:
    """What makes the co-located drafter of a fused run (``None`` without ``--draft``),
    its model on the target's device, in the target's dtype (``placement``); a draft that
    takes fewer token ids than the target's ``vocab_size`` is a ``UserInputError`` naming
    ``--draft`` here, before the server listens (its first fused round crashed on the
    target's first token outside them)."""
    from edgespec.config import ConfigError
    from edgespec.errors import UserInputError
    from edgespec.models.loading import load_model
    from edgespec.runtime.edge.draft_backends import check_draft_vocab, make_drafter

    if draft_name is None:
        return None
    say(f"loading the draft {draft_name}")
    model = None
    if draft_name != "ngram":
        device, dtype = placement.device, placement.dtype
        model = load_model(draft_name, dtype, verbose=verbose, device=device,
                           with_tokenizer=False).model  # fmt: skip
        try:
            check_draft_vocab(draft_name, model, vocab_size)
        except ConfigError as exc:  # --draft is a flag, not a ServerConfig field
            raise UserInputError(f"--draft: {exc.message}") from None

    def factory() -> Any:
        return make_drafter(draft_name, model, vocab_size)

    return factory
