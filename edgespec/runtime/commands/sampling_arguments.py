"""``edgespec draft``'s sampling flags (:func:`add_sampling_arguments`: the temperature, the
cuts after it, the penalties, the stop ids and ``--min-tokens``, the seed, ``--ignore-eos``)
and the refusal of those nothing would read (:func:`check_sampling_flags`)."""

from __future__ import annotations

import argparse
from typing import Any

from edgespec.argument_types import seed_int, token_ids
from edgespec.core.sampling_cuts import cuts_on


def add_sampling_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--temperature", type=float, help="sampling temperature (default 0, greedy, or --config's)"
    )
    needs = "needs --temperature > 0"
    parser.add_argument(
        "--top-k",
        type=int,
        help="sample among the K most likely tokens, ties by token id (default 0, every "
        f"token, or --config's; cut before --top-p and --min-p; {needs})",
    )
    parser.add_argument(
        "--top-p",
        type=float,
        help="nucleus sampling: sample among the most likely tokens holding this probability "
        f"mass, in (0, 1] (default 1, every token, or --config's; {needs})",
    )
    parser.add_argument(
        "--min-p",
        type=float,
        help="sample among the tokens at least this many times as likely as the likeliest, "
        f"in [0, 1] (default 0, every token, or --config's; cut after --top-p; {needs})",
    )
    _add_penalty_and_stop_arguments(parser)
    parser.add_argument(
        "--seed", type=seed_int, default=None, help="sampling seed (default: fresh entropy)"
    )
    parser.add_argument(
        "--ignore-eos",
        action="store_true",
        default=None,
        help="generate --max-new-tokens tokens past any end of sequence the target commits "
        "(fixed output lengths, for timing)",
    )


def _add_penalty_and_stop_arguments(parser: argparse.ArgumentParser) -> None:
    """``--repetition-penalty``, ``--frequency-penalty``, ``--presence-penalty``,
    ``--stop-token-ids``, ``--min-tokens``: greedy decoding takes them too."""
    parser.add_argument(
        "--repetition-penalty",
        type=float,
        help="divide the positive logits of the prompt's and output's tokens by this, multiply "
        "the others (above 0; default 1, off, or --config's; greedy too)",
    )
    for name, what in (("frequency", "times each token's count in the output"),
                       ("presence", "from every token in the output")):  # fmt: skip
        parser.add_argument(
            f"--{name}-penalty",
            type=float,
            help=f"subtract this {what} so far, in [-2, 2] (default 0, off, or --config's; "
            "greedy too)",
        )
    parser.add_argument(
        "--stop-token-ids",
        type=token_ids,
        metavar="IDS",
        help="comma-separated token ids the output ends at, committed, as at an end of "
        "sequence (default none, or --config's)",
    )
    parser.add_argument(
        "--min-tokens",
        type=int,
        metavar="N",
        help="no end of sequence or stop token before N output tokens (default 0)",
    )


def _requests_own(args: argparse.Namespace, config: Any) -> list[tuple[str, str]]:
    """The sampling flags given that ``--serve-openai``'s requests carry themselves, as
    (field name, the value as said after the flag), in the order they are refused."""
    on = [(name, f" {getattr(config, name):g}")
          for name in cuts_on(config.top_p, config.top_k, config.min_p)]  # fmt: skip
    on += [("ignore_eos", "")] if config.ignore_eos else []
    on += [(name, f" {getattr(config, name):g}")
           for name, off in (("repetition_penalty", 1.0), ("frequency_penalty", 0.0),
                             ("presence_penalty", 0.0), ("min_tokens", 0))
           if getattr(config, name) != off]  # fmt: skip
    on += [("stop_token_ids", "")] if config.stop_token_ids else []
    return on + ([("seed", f" {args.seed}")] if args.seed is not None else [])


def check_sampling_flags(args: argparse.Namespace, config: Any) -> None:
    """Refuse a ``--seed``, a cut (``top_k``, ``top_p``, ``min_p`` of ``config``, a
    ``DrafterConfig``), a penalty or a stop that nothing would read: greedy decoding draws
    nothing, and ``--serve-openai``'s requests carry their own."""
    from edgespec.errors import UserInputError

    endpoint = "the endpoint (--serve-openai) takes each request's own"
    for name, value in _requests_own(args, config) if args.serve_openai is not None else []:
        flag = "--" + name.replace("_", "-")
        raise UserInputError(f"{flag}{value}: {endpoint} {name}; drop {flag}")
    if args.seed is not None and config.temperature == 0:
        raise UserInputError(f"--seed {args.seed} is for sampling (--temperature > 0); "
                             "greedy decoding draws nothing")  # fmt: skip
