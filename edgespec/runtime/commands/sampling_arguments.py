"""The sampling flags (:func:`add_sampling_arguments`: the temperature, the cuts after it
(:func:`add_cut_arguments`, ``edgespec trace``'s too), the penalties, the stop ids and
``--min-tokens``, the seed, ``--ignore-eos``) of ``edgespec draft`` and, without ``--seed``,
of ``edgespec bench serve``'s requests
(:func:`sampling_from_flags`), and the refusal of those nothing would read
(:func:`check_sampling_flags`)."""

from __future__ import annotations

import argparse
from typing import Any

from edgespec.argument_types import logit_bias_pairs, seed_int, token_ids
from edgespec.core.sampling_cuts import cuts_on
from edgespec.core.sampling_params import SamplingParams

Flags = argparse.ArgumentParser | argparse._ArgumentGroup
"""Where sampling flags are added: a parser or one of its groups."""


def add_sampling_arguments(parser: Flags, config: bool = True, seed: bool = True) -> None:
    """The sampling flags; ``config``: their defaults may come from ``--config`` (the
    draft's), which their help then says; ``seed``: with ``--seed``."""
    also = ", or --config's" if config else ""
    parser.add_argument(
        "--temperature", type=float, help=f"sampling temperature (default 0, greedy{also})"
    )
    add_cut_arguments(parser, also)
    _add_penalty_and_stop_arguments(parser, also)
    if seed:
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


def add_cut_arguments(parser: Flags, also: str = "") -> None:
    """``--top-k``, ``--top-p``, ``--min-p``: the cuts a sampled row is made (``also``: where
    else their defaults may come from); ``edgespec trace`` takes them too."""
    needs = "needs --temperature > 0"
    parser.add_argument(
        "--top-k",
        type=int,
        help="sample among the K most likely tokens, ties by token id (default 0, every "
        f"token{also}; cut before --top-p and --min-p; {needs})",
    )
    parser.add_argument(
        "--top-p",
        type=float,
        help="nucleus sampling: sample among the most likely tokens holding this probability "
        f"mass, in (0, 1] (default 1, every token{also}; {needs})",
    )
    parser.add_argument(
        "--min-p",
        type=float,
        help="sample among the tokens at least this many times as likely as the likeliest, "
        f"in [0, 1] (default 0, every token{also}; cut after --top-p; {needs})",
    )


def _add_penalty_and_stop_arguments(parser: Flags, also: str) -> None:
    """``--repetition-penalty``, ``--frequency-penalty``, ``--presence-penalty``,
    ``--stop-token-ids``, ``--min-tokens``: greedy decoding takes them too."""
    parser.add_argument(
        "--repetition-penalty",
        type=float,
        help="divide the positive logits of the prompt's and output's tokens by this, multiply "
        f"the others (above 0; default 1, off{also}; greedy too)",
    )
    for name, what in (("frequency", "times each token's count in the output"),
                       ("presence", "from every token in the output")):  # fmt: skip
        parser.add_argument(
            f"--{name}-penalty",
            type=float,
            help=f"subtract this {what} so far, in [-2, 2] (default 0, off{also}; greedy too)",
        )
    parser.add_argument(
        "--stop-token-ids",
        type=token_ids,
        metavar="IDS",
        help=f"comma-separated token ids the output ends at, committed, as at an end of "
        f"sequence (default none{also})",
    )
    parser.add_argument(
        "--min-tokens",
        type=int,
        metavar="N",
        help="no end of sequence or stop token before N output tokens (default 0)",
    )
    parser.add_argument(
        "--logit-bias",
        type=logit_bias_pairs,
        metavar="ID:BIAS,...",
        help="add BIAS (in [-100, 100]) to token ID's logit before anything else, greedy too "
        f"(-100 bans it; at most 300 tokens; default none{also})",
    )


_REQUEST_FLAGS = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty",
                  "frequency_penalty", "presence_penalty", "stop_token_ids", "min_tokens",
                  "logit_bias", "ignore_eos")  # fmt: skip
"""The flags :func:`sampling_from_flags` reads: each the SamplingParams field of its name."""


def sampling_from_flags(args: argparse.Namespace, max_new_tokens: int) -> SamplingParams:
    """The sampling flags of ``args`` (no ``--seed``: each request draws its own) as every
    request's sampling, ``max_new_tokens`` tokens; a flag out of its range, or a cut at
    temperature 0, is a :class:`~edgespec.config.LocatedConfigError` naming the flag."""
    from edgespec.config import named_by_flags
    from edgespec.runtime.edge.config_sampling import (
        check_logit_bias,
        check_penalties,
        check_sampling,
        check_stops,
    )

    plain = SamplingParams(max_new_tokens=max_new_tokens)  # the defaults of flags not given
    fields = {name: getattr(plain, name) if getattr(args, name) is None else getattr(args, name)
              for name in _REQUEST_FLAGS}  # fmt: skip
    fields["ignore_eos"] = bool(fields["ignore_eos"])
    for name in ("stop_token_ids", "logit_bias"):  # ascending, as the wire takes them
        fields[name] = tuple(sorted(fields[name]))
    with named_by_flags({name: "--" + name.replace("_", "-") for name in fields}):
        check_sampling(max_new_tokens, fields["temperature"], fields["top_p"], fields["top_k"],
                       fields["min_p"])  # fmt: skip
        check_penalties(fields["repetition_penalty"], fields["frequency_penalty"],
                        fields["presence_penalty"])  # fmt: skip
        check_stops(fields["stop_token_ids"], fields["min_tokens"], max_new_tokens)
        check_logit_bias(fields["logit_bias"])
    return SamplingParams(max_new_tokens=max_new_tokens, **fields)


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
    on += [("logit_bias", "")] if config.logit_bias else []
    on += [("stop", "")] if config.stop else []
    on += [("logprobs", f" {config.logprobs}")] if config.logprobs is not None else []
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
