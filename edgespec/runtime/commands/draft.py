"""``edgespec draft``: an edge drafter client (or a baseline request) against a server."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any

from edgespec.runtime.commands.stop_arguments import add_stop_arguments, stop_policy_from_args
from edgespec.runtime.wire.emulated_link import add_link_arguments, link_overrides


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--server",
        action="append",
        help="host:port of an edgespec serve; repeat (or separate by commas) for several, "
        "and --routing picks one per request from their live loads",
    )
    parser.add_argument("--routing", help="routing policy across servers (default jsq)")
    parser.add_argument("--draft", help="draft model (HF directory, name) or 'ngram'")
    prompt = parser.add_mutually_exclusive_group(required=True)
    prompt.add_argument("--prompt", help="prompt text (needs a tokenizer)")
    prompt.add_argument("--prompt-ids", help="comma-separated prompt token ids")
    parser.add_argument("--tokenizer", help="tokenizer (model dir/name) if the draft has none")
    parser.add_argument("--config", help="DrafterConfig YAML file")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="config override, e.g. --set max_new_tokens=32 (repeatable)",
    )
    parser.add_argument("--gamma", type=int, help="static window γ (default policy: static 4)")
    parser.add_argument(
        "--window",
        help="window policy by name (static, dynamic, awc; its params with "
        "--set window.params=...); a policy that goes fused needs a server started with "
        "--draft, and --window on the server to run fused rounds back to back",
    )
    parser.add_argument(
        "--max-new-tokens", type=int, help="tokens to generate (default 64, or --config's)"
    )
    parser.add_argument(
        "--temperature", type=float, help="sampling temperature (default 0, greedy, or --config's)"
    )
    parser.add_argument(
        "--seed", type=int, default=None, help="sampling seed (default: fresh entropy)"
    )
    parser.add_argument(
        "--auth-token", help="token the server accepts (one of its --auth-token; default: none)"
    )
    parser.add_argument(
        "--tls-ca",
        metavar="PEM",
        help="connect over TLS, verifying the server with this CA certificate file (the "
        "server's own certificate when self-signed; default: plaintext)",
    )
    parser.add_argument(
        "--mode",
        choices=["distributed", "centralized", "fused"],
        default="distributed",
        help="distributed: draft here, verify on the server (default); centralized: the "
        "server decodes alone; fused: the server drafts (started with --draft) and verifies",
    )
    parser.add_argument("--records", help="write RoundRecords + RequestRecord here (JSONL)")
    parser.add_argument(
        "--lookup",
        action="store_true",
        help="prompt lookup first, the draft model where it finds nothing (greedy only)",
    )
    parser.add_argument(
        "--tree",
        metavar="B1,B2,...",
        help="draft a token tree: the draft's top-B_d tokens at depth d, e.g. 2,2,1,1 "
        "(with --lookup plus the lookup chain; greedy only)",
    )
    parser.add_argument(
        "--tree-min-prob",
        type=float,
        help="with --tree: drop candidates whose draft path probability is below this (default 0)",
    )
    parser.add_argument(
        "--tree-max-nodes",
        type=int,
        help="with --tree: the most tokens one tree may hold (default 24; the server "
        "refuses blocks over its max_draft_tokens, 32 by default)",
    )
    add_stop_arguments(parser)
    add_link_arguments(parser)


def make_drafter(
    name: str,
    model: Any,
    vocab_size: int,
    lookup: bool = False,
    tree: str | None = None,
    tree_min_prob: float = 0.0,
    tree_max_nodes: int = 24,
) -> Any:
    """A draft backend: prompt lookup for 'ngram'; for a model, a token tree when ``tree``
    gives its branching, else lookup first when ``lookup``, else the model alone
    (trimmed-vocabulary drafts through their own head)."""
    from edgespec.config import ConfigError
    from edgespec.core.tree import parse_branching
    from edgespec.runtime.backends.ngram import NgramDrafter
    from edgespec.runtime.backends.transformers_draft import HybridDraft, TransformersDraft
    from edgespec.runtime.backends.tree_draft import TreeDraft

    if name == "ngram":
        return NgramDrafter(vocab_size=vocab_size)
    if hasattr(model, "unrolled"):  # a feature draft: the server returns target features
        from edgespec.runtime.backends.feature_draft import FeatureDraft

        if tree is not None:
            raise ConfigError("tree", f"{name} is a feature draft, which drafts chains only")
        return FeatureDraft(model, lookup=lookup)
    if tree is not None:
        branching = parse_branching(tree)
        return TreeDraft(
            model, branching, lookup, min_path_prob=tree_min_prob, max_nodes=tree_max_nodes
        )
    if lookup:
        return HybridDraft(model)
    return TransformersDraft(model)


def configured_policy(kind: str, name: str, params: Mapping[str, Any]) -> Any:
    """The ``kind`` policy the config names; an unknown name or parameter is a
    :class:`~edgespec.config.ConfigError` naming the config field."""
    from edgespec.config import ConfigError
    from edgespec.policies.registry import PolicyConfigError, build_policy

    try:
        return build_policy(kind, name, params)
    except PolicyConfigError as exc:
        raise ConfigError(kind, str(exc)) from exc


def _overrides(args: argparse.Namespace) -> list[str]:
    from edgespec.config import overrides_from_flags
    from edgespec.errors import UserInputError

    keys = ["draft", "max_new_tokens", "temperature", "auth_token", "tls_ca"]
    keys += ["tree", "tree_min_prob", "tree_max_nodes"]
    flags = {key: getattr(args, key) for key in keys}
    flags["server"] = ",".join(args.server) if args.server else None
    out = [*args.set, *overrides_from_flags(flags)]
    if args.routing is not None:
        out.append(f"routing.name={args.routing}")
    if args.window is not None and args.gamma is not None:
        raise UserInputError("give --window or --gamma (a static window), not both")
    if args.window is not None:
        out.append(f"window.name={args.window}")
    if args.gamma is not None:
        out += ["window.name=static", f"window.params={{gamma: {args.gamma}}}"]
    if args.lookup:
        out.append("lookup=true")
    return out + link_overrides(args)


def run(args: argparse.Namespace) -> int:
    """Run one generation; a request the server refuses is reported in one line, exit 1
    (a server that cannot be reached, with a hint)."""
    from edgespec.runtime.errors import ErrorCode, RequestError

    try:
        return _run(args)
    except RequestError as exc:
        hint = ""
        if exc.code is ErrorCode.UNAVAILABLE:
            hint = " (is an `edgespec serve` running and reachable at the --server address?)"
        print(f"edgespec draft: {exc}{hint}", file=sys.stderr)
        return 1


def _routed_verifier(config: Any) -> Any:
    """A client of ``config.server``, or of the server ``config.routing`` picks from them."""
    import numpy as np

    from edgespec.runtime.edge.routing import route
    from edgespec.runtime.wire.grpc_client import RemoteVerifier

    verifiers = [
        RemoteVerifier(address, config.auth_token, config.tls_ca, config.request_timeout_s)
        for address in config.servers
    ]
    if len(verifiers) == 1:
        return verifiers[0]
    policy = configured_policy("routing", config.routing.name, config.routing.params)
    choice = route(verifiers, policy, np.random.default_rng())
    for index in choice.unreachable:
        print(f"edgespec draft: server {config.servers[index]} did not answer", file=sys.stderr)
    load = next(x for x in choice.loads if x.server_id == choice.server_index)
    print(
        f"edgespec draft: {config.routing.name} routed to {config.servers[choice.server_index]} "
        f"(queue {load.queue_depth}, sessions {load.num_active_sessions})",
        file=sys.stderr,
    )
    return verifiers[choice.server_index]


def _run(args: argparse.Namespace) -> int:
    import json
    import uuid

    from edgespec.config import ConfigError, load_config
    from edgespec.core.types import SamplingParams
    from edgespec.models.loading import load_model, load_tokenizer
    from edgespec.runtime.backends.base import stopping_drafter
    from edgespec.runtime.edge.drafter import DraftOptions, generate
    from edgespec.runtime.messages import SessionSpec
    from edgespec.runtime.server.config import DrafterConfig
    from edgespec.runtime.server.round_log import record_row
    from edgespec.runtime.wire.emulated_link import check_link_mode, wrap_verifier

    config = load_config(DrafterConfig, args.config, _overrides(args))
    stop = stop_policy_from_args(args)
    if stop is not None and args.mode != "distributed":
        raise ConfigError("stop_predictor", f"needs --mode distributed, got {args.mode}")
    check_link_mode(config, args.mode)
    model, tokenizer = (None, None)
    if config.draft != "ngram" and args.mode == "distributed":
        loaded = load_model(config.draft)
        model, tokenizer = loaded.model, loaded.tokenizer
    if args.tokenizer:
        tokenizer = load_tokenizer(args.tokenizer)
        if tokenizer is None:
            raise ConfigError("tokenizer", f"no tokenizer found at {args.tokenizer!r}")
    if args.prompt_ids is not None:
        try:
            prompt = tuple(int(t) for t in args.prompt_ids.split(","))
        except ValueError as exc:
            raise ConfigError("prompt_ids", f"expected comma-separated ints: {exc}") from exc
    else:
        if tokenizer is None:
            raise ConfigError("prompt", "text prompts need a tokenizer (--tokenizer MODEL)")
        prompt = tuple(tokenizer(args.prompt)["input_ids"])

    def show(tokens: tuple[int, ...]) -> None:
        text = tokenizer.decode(list(tokens)) if tokenizer is not None else f"{list(tokens)} "
        sys.stdout.write(text)
        sys.stdout.flush()

    sampling = SamplingParams(
        temperature=config.temperature, max_new_tokens=config.max_new_tokens, seed=args.seed
    )
    window = configured_policy("window", config.window.name, config.window.params)
    verifier = _routed_verifier(config)
    session_id = f"{config.client_id}-{uuid.uuid4().hex[:12]}"
    if args.mode != "distributed":
        spec = SessionSpec(session_id, config.client_id, prompt, sampling, config.slo_class)
        gamma = int(config.window.params.get("gamma", 4))
        for chunk in verifier.generate(spec, fused=args.mode == "fused", gamma=gamma):
            show(chunk)
        sys.stdout.write("\n")
        return 0
    max_nodes = config.tree_max_nodes
    limit = verifier.max_draft_tokens() if config.tree is not None else None
    if limit is not None and max_nodes > limit:
        print(
            f"edgespec draft: tree_max_nodes {max_nodes} exceeds the server's max_draft_tokens "
            f"{limit}; using {limit}",
            file=sys.stderr,
        )
        max_nodes = limit
    drafter = make_drafter(
        config.draft,
        model,
        verifier.vocab_size(),
        config.lookup,
        config.tree,
        config.tree_min_prob,
        max_nodes,
    )
    if stop is not None:
        try:
            stopping_drafter(drafter)
        except ValueError as exc:
            raise ConfigError("stop_predictor", str(exc)) from None
    options = DraftOptions(session_id, config.client_id, config.slo_class)
    linked = wrap_verifier(verifier, config)  # itself unless a link_* setting is given
    result = generate(linked, drafter, prompt, sampling, options, window, show, stop=stop)
    sys.stdout.write("\n")
    r = result.request
    passes = sum(x.draft_passes for x in result.rounds)
    sent = f"{r.num_drafted} sent of {passes} drafted, " if stop is not None else ""
    print(
        f"[{r.num_output_tokens} tokens, {r.num_rounds} rounds, {sent}"
        f"{r.num_accepted / max(r.num_rounds, 1):.2f} accepted per round, acceptance "
        f"{r.num_accepted / max(r.num_drafted, 1):.2f} per sent token, "
        f"{r.tokens_per_s:.1f} tok/s; "
        f"draft {r.draft_s:.3f}s network {r.network_s:.3f}s queue {r.queue_s:.3f}s "
        f"verify {r.verify_s:.3f}s]",
        file=sys.stderr,
    )
    if args.records:
        with open(args.records, "w") as f:
            rows = [record_row(r) for r in result.rounds] + [record_row(result.request)]
            f.writelines(json.dumps(row) + "\n" for row in rows)
    return 0
