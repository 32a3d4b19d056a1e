"""``edgespec draft``: an edge drafter client (or a baseline request) against a server."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any

from edgespec.arguments import add_verbose
from edgespec.core.sequences import first_difference
from edgespec.runtime.commands.draft_run import DraftRun
from edgespec.runtime.commands.stop_arguments import add_stop_arguments, stop_policy_from_args
from edgespec.runtime.edge.draft_backends import DRAFT_BACKENDS
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
    parser.add_argument(
        "--backend",
        choices=DRAFT_BACKENDS,
        default="transformers",
        help="what runs --draft here: transformers (default) or llamacpp (a GGUF: gemma3-270m "
        "or a .gguf file; chains, with --lookup optionally)",
    )
    prompt = parser.add_mutually_exclusive_group(required=True)
    prompt.add_argument("--prompt", help="prompt text (needs a tokenizer)")
    prompt.add_argument("--prompt-ids", help="comma-separated prompt token ids")
    prompt.add_argument(
        "--serve-openai",
        metavar="HOST:PORT",
        help="instead of one prompt, serve an OpenAI-compatible HTTP endpoint (/v1/completions, "
        "/v1/chat/completions, /v1/models; docs/RUNTIME.md) drafting every request here",
    )
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
        "--draft (or --fused-rounds cloud_only), and --window on the server to run fused "
        "rounds back to back",
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
        "server decodes alone; fused: the server drafts (started with --draft) and verifies, "
        "or decodes one token per round (started with --fused-rounds cloud_only)",
    )
    parser.add_argument(
        "--records",
        help="write the RequestRecord (and, distributed, the RoundRecords) here (JSONL)",
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help="run the prompt centralized, then distributed; print both stats lines and the "
        "speed-up, and check the outputs are token-identical (exit 1 if not; greedy only)",
    )
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
    add_semantic_arguments(parser)
    add_link_arguments(parser)
    add_verbose(parser)


def add_semantic_arguments(parser: argparse.ArgumentParser) -> None:
    """``--verify`` / ``--threshold`` / ``--upload`` / ``--channel-*``."""
    group = parser.add_argument_group(
        "semantic (LOSSY) verification, WISV (docs/RUNTIME.md; a server with --semantic-head)"
    )
    group.add_argument(
        "--verify",
        choices=["exact", "semantic"],
        help="exact: lossless (default); semantic: the server's decision head may accept "
        "mismatching draft tokens (lossy; greedy neural chain drafts only)",
    )
    group.add_argument(
        "--threshold",
        type=int,
        metavar="T",
        help="semantic: reject a mismatch when the head's p >= T/16, T in 0..16 (0: exact "
        "greedy speculative decoding; the paper uses 12)",
    )
    group.add_argument(
        "--upload",
        choices=["fh", "sh", "auto"],
        help="semantic: FH sends the draft's hidden states of every token, SH only those the "
        "server asks for (one more exchange in rounds with a mismatch); auto (default): FH "
        "when the handshake RTT is above 10 ms",
    )
    group.add_argument(
        "--channel-uplink-mbps",
        type=float,
        metavar="MBIT/S",
        help="semantic: the uplink rate reported to the head (default: --link-bandwidth-mbps)",
    )
    group.add_argument(
        "--channel-per", type=float, metavar="P", help="semantic: packet error rate (default 0)"
    )
    group.add_argument(
        "--channel-rtt-ms",
        type=float,
        metavar="MS",
        help="semantic: the RTT reported to the head (default: --link-rtt-ms, else 0)",
    )


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
    keys += ["threshold", "upload", "channel_uplink_mbps", "channel_per", "channel_rtt_ms"]
    flags = {key: getattr(args, key) for key in keys}
    flags["verification"] = args.verify
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
    from edgespec.runtime.errors import RequestError

    try:
        return _run(args)
    except RequestError as exc:
        print(exc.client_line("draft"), file=sys.stderr)
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
    """Check the arguments, reach the server, then load what the mode needs and run it:
    nothing slow happens before a bad flag or an unreachable server is reported."""
    from edgespec.config import ConfigError, load_config
    from edgespec.runtime.server.config import DrafterConfig
    from edgespec.runtime.wire.emulated_link import check_link_mode

    config = load_config(DrafterConfig, args.config, _overrides(args))
    stop = stop_policy_from_args(args)
    if stop is not None and args.mode != "distributed":
        raise ConfigError("stop_predictor", f"needs --mode distributed, got {args.mode}")
    if args.compare:
        if args.mode != "distributed":
            raise ConfigError("mode", "--compare runs distributed and centralized: drop --mode")
        if config.temperature != 0:
            raise ConfigError(
                "temperature", "--compare checks token-identical outputs: greedy only"
            )
    check_link_mode(config, args.mode)
    if config.verification == "semantic" and args.mode != "distributed":
        raise ConfigError("verification", f"semantic needs --mode distributed, got {args.mode}")
    if config.verification == "semantic" and args.compare:
        raise ConfigError(
            "verification", "--compare checks token-identical outputs; semantic is lossy"
        )
    prompt_ids = _prompt_ids(args.prompt_ids) if args.prompt_ids is not None else None
    window = configured_policy("window", config.window.name, config.window.params)
    if args.serve_openai is not None:
        return _serve_openai(args, config, stop)
    verifier = _routed_verifier(config)
    vocab_size = verifier.vocab_size()  # reaches the server before anything loads
    draft = _load_draft(config, args) if args.mode == "distributed" else None
    tokenizer = _tokenizer(args, config, verifier, draft, needed=prompt_ids is None)
    prompt = prompt_ids if prompt_ids is not None else tuple(tokenizer(args.prompt)["input_ids"])
    run = DraftRun(config, verifier, prompt, tokenizer, args.seed)
    if args.compare:
        return _compare(run, draft, vocab_size, window, stop, args)
    if args.mode != "distributed":
        outcome = run.server_side(fused=args.mode == "fused")
    else:
        outcome = run.distributed(draft, vocab_size, window, stop, args.records is not None)
    outcome.report(args.mode)
    if args.records:
        outcome.write_records(args.records)
    return 0


def _serve_openai(args: argparse.Namespace, config: Any, stop: Any) -> int:
    """``--serve-openai``: the flags checked, the server reached, the draft and tokenizer
    loaded, then the endpoint served until interrupted (edgespec.runtime.openai_api)."""
    from edgespec.runtime.openai_api import serve

    serve.parse_address(args.serve_openai)
    serve.check_serve_flags(args.mode, args.compare, args.records, stop, config)
    verifier = _routed_verifier(config)
    vocab_size = verifier.vocab_size()  # reaches the server before anything loads
    draft = _load_draft(config, args)
    tokenizer = _tokenizer(args, config, verifier, draft, needed=True)
    return serve.serve_openai(args.serve_openai, config, verifier, draft, tokenizer, vocab_size)


def _compare(
    run: DraftRun, draft: Any, vocab_size: int, window: Any, stop: Any, args: argparse.Namespace
) -> int:
    """``--compare``: centralized, then distributed, on the same prompt; the speed-up, and
    whether the outputs are token-identical (exit 1 when they are not)."""
    central = run.server_side(fused=False)
    central.report("centralized")
    spec = run.distributed(draft, vocab_size, window, stop, args.records is not None)
    spec.report("distributed")
    if args.records:
        spec.write_records(args.records)
    same = central.output == spec.output
    ratio = spec.request.tokens_per_s / max(central.request.tokens_per_s, 1e-12)
    print(
        f"distributed {spec.request.tokens_per_s:.1f} tok/s vs centralized "
        f"{central.request.tokens_per_s:.1f} tok/s: {ratio:.2f}x; outputs "
        + (
            "identical"
            if same
            else f"differ from token {first_difference(central.output, spec.output)}"
        ),
        file=sys.stderr,
    )
    return 0 if same else 1


def _prompt_ids(text: str) -> tuple[int, ...]:
    from edgespec.config import ConfigError

    try:
        return tuple(int(t) for t in text.split(","))
    except ValueError as exc:
        raise ConfigError("prompt_ids", f"expected comma-separated ints: {exc}") from exc


def _load_draft(config: Any, args: argparse.Namespace) -> Any:
    """The draft model on ``--backend`` (with its tokenizer), or ``None`` for prompt lookup."""
    from edgespec.runtime.edge.draft_backends import load_draft_model

    return load_draft_model(config.draft, args.backend, args.verbose)


def _tokenizer(
    args: argparse.Namespace, config: Any, verifier: Any, draft: Any, needed: bool
) -> Any:
    """``--tokenizer``'s; else the loaded draft's; else the draft's by its name, or the
    server's target's by the name the server gives (a tokenizer alone: no weights load);
    ``None`` when there is none, a :class:`ConfigError` then if a text prompt ``needed``
    one."""
    from edgespec.config import ConfigError
    from edgespec.models.loading import load_tokenizer

    if args.tokenizer:
        tokenizer = load_tokenizer(args.tokenizer, args.verbose)
        if tokenizer is None:
            raise ConfigError("tokenizer", f"no tokenizer found at {args.tokenizer!r}")
        return tokenizer
    if draft is not None and draft.tokenizer is not None:
        return draft.tokenizer
    if draft is None and config.draft not in (None, "ngram"):
        tokenizer = load_tokenizer(config.draft, args.verbose)
        if tokenizer is not None:
            return tokenizer
    target = verifier.target_name()
    tokenizer = load_tokenizer(target, args.verbose) if target else None
    if tokenizer is None and needed:
        where = (
            f"nor has the server's target {target!r} one here"
            if target
            else ("and the server does not name its target")
        )
        raise ConfigError(
            "prompt", f"text prompts need a tokenizer: the draft has none, {where} "
            "(--tokenizer MODEL, or --prompt-ids)",
        )  # fmt: skip
    return tokenizer
