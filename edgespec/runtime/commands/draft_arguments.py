"""``edgespec draft``'s flags (:func:`add_arguments`) and the config overrides they make
(:func:`overrides`)."""

from __future__ import annotations

import argparse
from typing import Any

from edgespec.argument_types import positive_int, token_ids, utf8_text
from edgespec.arguments import add_device_arguments, add_threads_and_cpus, add_verbose
from edgespec.output_paths import output_file
from edgespec.runtime.commands.draft_chat import add_chat_arguments
from edgespec.runtime.commands.endpoint_arguments import add_endpoint_arguments
from edgespec.runtime.commands.link_arguments import (
    LINK_FLAGS,
    add_link_arguments,
    link_overrides,
)
from edgespec.runtime.commands.sampling_arguments import add_sampling_arguments
from edgespec.runtime.commands.server_access_arguments import add_server_access_arguments
from edgespec.runtime.commands.stop_arguments import add_stop_arguments
from edgespec.runtime.edge.draft_backends import DRAFT_BACKENDS


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
    prompt.add_argument("--prompt", type=utf8_text, help="prompt text (needs a tokenizer)")
    prompt.add_argument("--prompt-ids", type=token_ids, help="comma-separated prompt token ids")
    prompt.add_argument(
        "--serve-openai",
        metavar="HOST:PORT",
        help="instead of one prompt, serve an OpenAI-compatible HTTP endpoint (/v1/completions, "
        "/v1/chat/completions, /v1/models; docs/RUNTIME.md) drafting every request here",
    )
    prompt.add_argument(
        "--interactive",
        action="store_true",
        help="instead of one prompt, a conversation: each line of stdin a user turn, rendered "
        "with the history by the chat template, each reply generated in turn (Ctrl-D ends it)",
    )
    add_chat_arguments(parser)
    add_endpoint_arguments(parser)
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
        "--stop",
        action="append",
        metavar="TEXT",
        help="end the output before TEXT (repeat for up to 4; the OpenAI request's stop): the "
        "text is cut there and the session closed (needs a tokenizer; default none, or "
        "--config's)",
    )
    add_sampling_arguments(parser)
    add_server_access_arguments(parser)
    parser.add_argument(
        "--max-message-bytes",
        type=positive_int,
        help="the client's gRPC limit per message (default 4194304, 4 MiB; raise it with the "
        "server's max_message_bytes for hidden-state drafts with long prompts)",
    )
    parser.add_argument(
        "--request-timeout-s",
        type=float,
        metavar="S",
        help="deadline of each call to the server (default 30); a verification past it is "
        "sent again on the same session (the server keeps its work), until "
        "--progress-timeout-s",
    )
    parser.add_argument(
        "--max-reconnects",
        type=int,
        metavar="N",
        help="give up after N reconnects (or replays of a round the server aborted) in a "
        "row without a committed token (default 5)",
    )
    parser.add_argument(
        "--progress-timeout-s",
        type=float,
        metavar="S",
        help="give up after S seconds without a committed token (default 60); no call to "
        "verify waits past it",
    )
    parser.add_argument(
        "--retry-timeout-s",
        type=float,
        metavar="S",
        help="reopen a lost session for up to S seconds while the server is unreachable "
        "(default 30); a new request waits as long in all while routing finds no --server "
        "answering and its first open finds the server down (--serve-openai: any request, "
        "and its start; one prompt against one --server fails at once)",
    )
    parser.add_argument(
        "--mode",
        choices=["distributed", "centralized", "fused"],
        default="distributed",
        help="distributed: draft here, verify on the server (default); centralized: the "
        "server decodes alone; fused: the server drafts (started with --draft) and verifies, "
        "or decodes one token per round (started with --fused-rounds cloud_only); with "
        "--serve-openai, the requests' default edgespec.mode (centralized: no draft loaded)",
    )
    parser.add_argument(
        "--records",
        type=output_file,
        help="write the RequestRecord (and, distributed, the RoundRecords) here (JSONL)",
    )
    parser.add_argument(
        "--logprobs",
        type=int,
        metavar="N",
        help="after the text, each output token's log-probability under the target and its N "
        "likeliest tokens' (0..20; distributed or centralized, not fused: they come with "
        "the server's tokens)",
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help="run the prompt centralized (the server's own decoding, on its kernels: an exact "
        "server's are slower than plain decoding), then distributed (with --mode fused: fused); "
        "print both stats lines and the speed-up, and check greedy outputs are token-identical "
        "(exit 1 if not; sampled ones are two draws, not compared)",
    )
    parser.add_argument(
        "--lookup",
        action="store_true",
        help="prompt lookup first, the draft model where it finds nothing (sampling too)",
    )
    parser.add_argument(
        "--tree",
        metavar="B1,B2,...",
        help="draft a token tree: the draft's top-B_d tokens at depth d, e.g. 2,2,1,1 "
        "(with --lookup plus the lookup chain)",
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
    add_device_arguments(parser, "the --draft model")
    add_threads_and_cpus(parser, "drafter")
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
        "greedy speculative decoding; the paper uses 12); required, except with the bundled "
        "gemma3-270m-draft (default: the bundled head's shipped default, the largest T "
        "that kept >= 95%% of held-out GSM8K answers, printed when used)",
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


_PLAIN_FLAGS = ("draft", "max_new_tokens", "temperature", "top_p", "top_k", "min_p", "ignore_eos",
                "repetition_penalty", "frequency_penalty", "presence_penalty", "stop_token_ids",
                "min_tokens", "logit_bias", "logprobs", "stop", "auth_token",
                "tls_ca",
                "tls_server_name", "max_message_bytes", "request_timeout_s", "max_reconnects",
                "progress_timeout_s", "retry_timeout_s", "tree", "tree_min_prob",
                "tree_max_nodes", "threshold", "upload", "channel_uplink_mbps", "channel_per",
                "channel_rtt_ms")  # fmt: skip
"""The flags whose value is the DrafterConfig field of the same name (``--max-new-tokens``:
``max_new_tokens``)."""


def _flag_settings(args: argparse.Namespace) -> list[tuple[str, str, Any]]:
    """Each field flag as (override key, flag, value; ``None``: not given)."""
    settings = [(key, "--" + key.replace("_", "-"), getattr(args, key)) for key in _PLAIN_FLAGS]
    settings.append(("verification", "--verify", args.verify))
    settings.append(("server", "--server", ",".join(args.server) if args.server else None))
    return settings


def flag_fields(args: argparse.Namespace) -> dict[str, str]:
    """The DrafterConfig fields the flags given set (override key → the flag): a field's
    error names the flag the user typed (:func:`edgespec.config.named_by_flags`):
    ``--window`` and ``--routing`` set a policy's name, not the params ``--set`` gives it."""
    fields = {key: flag for key, flag, value in _flag_settings(args) if value is not None}
    given = [("routing.name", "--routing", args.routing), ("window.name", "--window", args.window),
             ("window", "--gamma", args.gamma), ("lookup", "--lookup", args.lookup or None),
             *[(key, flag, getattr(args, key)) for key, flag in LINK_FLAGS.items()],
             ("link_seed", "--link-seed", args.link_seed),
             ("link_draft_probs", "--link-draft-probs", args.link_draft_probs)]  # fmt: skip
    return fields | {key: flag for key, flag, value in given if value is not None} | FLAG_ONLY


_FLAG_ONLY_NAMES = ("mode", "stop_predictor", "serve_openai", "openai_max_queued", "prompt")
FLAG_ONLY = {name: "--" + name.replace("_", "-") for name in (*_FLAG_ONLY_NAMES, "tokenizer")}
"""Flags that are no DrafterConfig field, whose errors the checks raise at the flag's name."""


def overrides(args: argparse.Namespace) -> list[str]:
    """The flags as DrafterConfig overrides (after ``--set``); ``--window`` with ``--gamma``
    is a :class:`~edgespec.errors.UserInputError`."""
    from edgespec.config import overrides_from_flags
    from edgespec.errors import UserInputError

    flags = {key: value for key, _, value in _flag_settings(args)}
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
