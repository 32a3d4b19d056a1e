"""``edgespec draft``: an edge drafter client (or a baseline request) against a server."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from edgespec.runtime.commands.cpus import apply_cpus_and_threads
from edgespec.runtime.commands.draft_arguments import add_arguments, flag_fields, overrides
from edgespec.runtime.commands.draft_chat import (
    chat_end_ids,
    chat_on,
    check_chat_flags,
    prompt_text_ids,
    template_rendering,
)
from edgespec.runtime.commands.draft_checks import (
    check_blocks,
    check_draft_name,
    check_modes,
    check_stop_ids,
    check_tree_depth,
    draft_placement,
    semantic_notes,
)
from edgespec.runtime.commands.draft_compare import compare
from edgespec.runtime.commands.draft_connect import connect, connect_waiting
from edgespec.runtime.commands.draft_context import ContextBudget
from edgespec.runtime.commands.draft_conversation import converse
from edgespec.runtime.commands.draft_run import DraftRun, Outcome
from edgespec.runtime.commands.endpoint_arguments import check_endpoint_flags
from edgespec.runtime.commands.sampling_arguments import check_sampling_flags
from edgespec.runtime.commands.signals import stopped
from edgespec.runtime.commands.stages import Stages
from edgespec.runtime.commands.stop_arguments import stop_policy_from_args
from edgespec.runtime.edge.draft_backends import check_draft_vocab

if TYPE_CHECKING:
    from edgespec.runtime.messages import ServerHealth

__all__ = ["add_arguments", "run"]


def run(args: argparse.Namespace) -> int:
    """Run one generation; a request the server refuses is reported in one line, exit 1
    (a server that cannot be reached, with a hint); one that made no progress within its
    budget (``--max-reconnects``, ``--progress-timeout-s``), exit 3. SIGTERM stops it as
    Ctrl-C does (its session on the server closed; ``--serve-openai``: its requests in
    flight drained), one line on stderr, exit 143 (Ctrl-C: 130)."""
    from edgespec.config import named_by_flags
    from edgespec.runtime.edge.progress import NO_PROGRESS_EXIT, NoProgress
    from edgespec.runtime.errors import RequestError

    try:
        with named_by_flags(flag_fields(args)):  # a flag's field: its name
            return _run(args)
    except NoProgress as exc:  # one line, its own exit status; the session is closed
        print(f"edgespec draft: {exc.message}", file=sys.stderr)
        return NO_PROGRESS_EXIT
    except RequestError as exc:
        print(exc.client_line("draft"), file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    """Check the arguments, reach the server, then load what the mode needs and run it:
    nothing slow happens before a bad flag or an unreachable server is reported. Each slow
    stage is said on stderr as it starts, and ``ready`` before the first round."""
    from edgespec.config import load_config
    from edgespec.policies.registry import build_policy_at
    from edgespec.runtime.edge.config import DrafterConfig

    say = Stages("draft")
    config = load_config(DrafterConfig, args.config, overrides(args))
    check_sampling_flags(args, config)
    check_chat_flags(args)
    check_endpoint_flags(args)
    _warn_of_budget(config)
    stop = stop_policy_from_args(args)
    check_modes(args, config, stop is not None)
    # an error at window.name (--window) or at window.params... (--set, or --gamma)
    window = build_policy_at("window", "window", config.window)
    routing = build_policy_at("routing", "routing", config.routing)  # before anything connects
    check_tree_depth(config.tree, window, gamma_by_flag=args.gamma is not None)
    placement = draft_placement(args)
    apply_cpus_and_threads(args.cpus, args.threads)  # every mode's draft, and its workers
    if args.serve_openai is not None:
        return _serve_openai(args, config, routing, stop, placement, say)
    if args.mode == "distributed":
        check_draft_name(config.draft)  # an unknown draft is named before the server is reached
    # several servers: routing waits through a restart, and the first open for what it left
    reached = connect(config, routing, say, config.retry_timeout_s)
    verifier, health, vocab_size = reached.verifier, reached.health, reached.health.vocab_size
    check_blocks(config, window, args.mode, health)
    check_stop_ids(config.stop_token_ids, vocab_size)
    for note in semantic_notes(config, health):  # the threshold against the head it serves
        print(f"edgespec draft: {note}", file=sys.stderr)
    ids, tokenizer, draft = _prompt_and_models(args, config, health, placement, say)
    check_draft_vocab(config.draft, None if draft is None else draft.model, vocab_size)
    end_ids = chat_end_ids(tokenizer, config.ignore_eos) if chat_on(args) else frozenset()
    run = DraftRun(config, verifier, ids, tokenizer, args.seed,
                   first_open_retry_s=reached.open_retry_s, end_ids=end_ids)  # fmt: skip
    if args.compare:
        return compare(run, health.numerics, draft, vocab_size, window, stop, args, say.done)
    generate = partial(_generate, args, draft, vocab_size, window, stop)
    if args.interactive:
        say.done()
        budget = ContextBudget.of(args, config.max_new_tokens, health.max_context_tokens,
                                  vocab_size)  # fmt: skip
        return converse(run, args.system, template_rendering(args), budget, generate, args.mode)
    outcome = generate(run, say.done)
    outcome.report(args.mode)
    if args.records:
        outcome.write_records(args.records)
    return 0


def _generate(
    args: argparse.Namespace, draft: Any, vocab_size: int, window: Any, stop: Any,
    run: DraftRun, ready: Callable[[], None] | None,
) -> Outcome:  # fmt: skip
    """``run`` in the mode asked (``ready``: called before its first token is asked for)."""
    if args.mode != "distributed":
        return run.server_side(fused=args.mode == "fused", ready=ready)
    return run.distributed(draft, vocab_size, window, stop, args.records is not None, ready=ready)


def _warn_of_budget(config: Any) -> None:
    """Say on stderr when ``config``'s progress budget is shorter than its request timeout."""
    from edgespec.runtime.edge.progress import shorter_budget_warning

    line = shorter_budget_warning(config.progress_timeout_s, config.request_timeout_s,
                                  "--progress-timeout-s", "--request-timeout-s")  # fmt: skip
    if line is not None:
        print(f"edgespec draft: {line}", file=sys.stderr)


def _prompt_and_models(
    args: argparse.Namespace, config: Any, health: ServerHealth, placement: Any, say: Stages
) -> tuple[tuple[int, ...], Any, Any]:
    """The prompt's ids, the tokenizer and the draft (``None`` unless distributed), the
    prompt and ``max_new_tokens`` checked against the target's context and vocabulary (as
    the server's ``health`` says them) as soon as each is known: ``--prompt-ids`` (or
    ``max_new_tokens`` alone) before anything loads; ``--prompt`` before the draft loads
    when ``--tokenizer`` names the tokenizer, else just after it (the draft's own tokenizer
    comes with it)."""
    budget = ContextBudget.of(args, config.max_new_tokens, health.max_context_tokens,
                              health.vocab_size)  # fmt: skip
    ids: tuple[int, ...] | None = budget.checked_ids(args.prompt_ids)
    tokenizer = None
    if args.tokenizer:  # not the draft's: loaded (and the text prompt checked) before it
        tokenizer = _tokenizer(args, config, health.target_name, None, ids is None, say)
        ids = ids if ids is not None else prompt_text_ids(budget, tokenizer, args)
    draft = _load_draft(config, args, placement, say) if args.mode == "distributed" else None
    if not args.tokenizer:
        tokenizer = _tokenizer(args, config, health.target_name, draft, ids is None, say)
    if ids is None:  # a text prompt: _tokenizer refused to go on without a tokenizer
        ids = prompt_text_ids(budget, tokenizer, args)
    return ids, tokenizer, draft


def _serve_openai(
    args: argparse.Namespace, config: Any, routing: Any, stop: Any, placement: Any, say: Stages
) -> int:
    """``--serve-openai``: the flags checked, the server reached, the draft (not with
    ``--mode centralized``) and tokenizer loaded (each said as it starts), then the endpoint
    served until Ctrl-C or SIGTERM (edgespec.runtime.openai_api), which says where it
    listens; then the signal's line and exit status."""
    from edgespec.runtime.openai_api import serve
    from edgespec.runtime.openai_api.access import Access
    from edgespec.runtime.openai_api.schema import Limits
    from edgespec.runtime.wire.ports import ensure_port_free

    host, port = serve.parse_address(args.serve_openai)
    serve.check_serve_flags(args.mode, args.compare, args.records, stop, config)
    limits = Limits(args.openai_max_body_bytes, args.openai_max_prompt_tokens,
                    args.openai_max_tokens)  # fmt: skip
    serve.check_limits(config.max_new_tokens, limits)
    concurrency = serve.concurrency(args.openai_max_concurrent, args.openai_max_queued,
                                    args.openai_max_per_client)  # fmt: skip
    ensure_port_free(host, port)  # before the server is reached or the draft loads
    drafts = args.mode == "distributed"  # centralized: the server decodes every request
    if drafts:
        check_draft_name(config.draft)
    reached = connect_waiting(config, routing, say)  # each server's Health, asked once
    vocab_size = reached.health.vocab_size
    draft = _load_draft(config, args, placement, say) if drafts else None
    if drafts:
        check_draft_vocab(config.draft, None if draft is None else draft.model, vocab_size)
    tokenizer = _tokenizer(args, config, reached.health.target_name, draft, True, say)
    access = Access(args.openai_api_key, args.openai_allowed_origins or ())
    end = serve.serve_openai(args.serve_openai, config, reached.verifier, draft, tokenizer,
                             vocab_size, limits, concurrency=concurrency,
                             told=reached.told, mode=args.mode, access=access)  # fmt: skip
    if end.signum is None:  # uvicorn said why, above
        print("edgespec draft: the OpenAI-compatible endpoint stopped serving", file=sys.stderr)
        return 1
    status = stopped("draft", end.signum)
    if end.num_abandoned:  # their workers would hold the exit until their calls time out
        sys.stdout.flush()
        os._exit(status)
    return status


def _load_draft(config: Any, args: argparse.Namespace, placement: Any, say: Stages) -> Any:
    """The draft model on ``--backend`` (with its tokenizer) on ``placement``'s device (said
    as it starts), or ``None`` for prompt lookup."""
    from edgespec.runtime.commands.cpus import thread_count
    from edgespec.runtime.edge.draft_backends import load_draft_model

    if config.draft != "ngram":
        say(f"loading the draft {config.draft}")
    threads = thread_count(args.cpus, args.threads)  # llama.cpp's own; torch's are set
    return load_draft_model(config.draft, args.backend, args.verbose, placement, threads)


def _tokenizer(
    args: argparse.Namespace, config: Any, target: str | None, draft: Any, needed: bool,
    say: Stages,
) -> Any:  # fmt: skip
    """``--tokenizer``'s; else the loaded draft's; else the draft's by its name, or the
    server's target's by the name its Health gave, ``target`` (a tokenizer alone: no
    weights load; each load said as it starts); ``None`` when there is none, a
    :class:`ConfigError` then if a text prompt ``needed`` one, or ``--stop``'s text."""
    from edgespec.config import ConfigError

    if args.tokenizer:
        tokenizer = _load_tokenizer(args.tokenizer, args.verbose, say)
        if tokenizer is None:
            raise ConfigError("tokenizer", f"no tokenizer found at {args.tokenizer!r}")
        return tokenizer
    if draft is not None and draft.tokenizer is not None:
        return draft.tokenizer
    if draft is None and config.draft not in (None, "ngram"):
        tokenizer = _load_tokenizer(config.draft, args.verbose, say)
        if tokenizer is not None:
            return tokenizer
    tokenizer = _load_tokenizer(target, args.verbose, say) if target else None
    if tokenizer is None and (needed or config.stop):
        where = f"nor has the server's target {target!r} one here" if target else (
            "and the server does not name its target")  # fmt: skip
        what, ids = ("text prompts", ", or --prompt-ids") if needed else ("stop sequences", "")
        raise ConfigError("prompt" if needed else "stop", f"{what} need a tokenizer: the "
                          f"draft has none, {where} (--tokenizer MODEL{ids})")  # fmt: skip
    return tokenizer


def _load_tokenizer(name: str, verbose: bool, say: Stages) -> Any:
    """The tokenizer ``name`` gives, said as it starts (transformers' import and the
    tokenizer's files take seconds); ``None`` when it gives none."""
    from edgespec.models.loading import load_tokenizer

    say(f"loading the tokenizer {name}")
    return load_tokenizer(name, verbose)
