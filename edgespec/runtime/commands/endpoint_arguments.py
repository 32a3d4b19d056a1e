"""``edgespec draft --serve-openai``'s limits: request sizes, generations at once, the queue
and the cap per client (:func:`add_endpoint_arguments`; the endpoint: docs/RUNTIME.md); who
may call it (an API key, the web origins of browsers); and the refusal of any of them
without ``--serve-openai`` (:func:`check_endpoint_flags`)."""

from __future__ import annotations

import argparse
from typing import Any

from edgespec.argument_types import positive_int
from edgespec.server_access_types import auth_token

SIZE_DEFAULTS: dict[str, tuple[int, str]] = {
    "openai_max_body_bytes": (1 << 20, "request body bytes (413 beyond)"),
    "openai_max_prompt_tokens": (2048, "prompt tokens (400 beyond)"),
    "openai_max_tokens": (1024, "max_tokens a request may ask for (400 beyond)"),
}
"""The size flags, their defaults and what each bounds."""


def _origins(text: str) -> tuple[str, ...]:
    from edgespec.runtime.openai_api.access import origin_list

    try:
        return origin_list(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_endpoint_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``--openai-*`` flags, each applying to ``--serve-openai`` only."""
    for name, (default, what) in SIZE_DEFAULTS.items():
        parser.add_argument(
            "--" + name.replace("_", "-"), type=positive_int, default=default,
            help=f"--serve-openai: the most {what} (default {default})",
        )  # fmt: skip
    parser.add_argument(
        "--openai-max-concurrent",
        type=positive_int,
        metavar="N",
        help="--serve-openai: generations running at once (default 4 per CPU core)",
    )
    parser.add_argument(
        "--openai-max-queued",
        type=int,
        metavar="N",
        help="--serve-openai: requests waiting for a generation slot; beyond, 429 with "
        "Retry-After (default: as many as --openai-max-concurrent)",
    )
    parser.add_argument(
        "--openai-max-per-client",
        type=positive_int,
        metavar="N",
        help="--serve-openai: requests one client address may have in flight; "
        "beyond, 429 with Retry-After (default: no cap; an endpoint that several hosts share "
        "may set it to --openai-max-concurrent, leaving the queue to the others)",
    )
    parser.add_argument(
        "--openai-api-key",
        type=auth_token,
        metavar="KEY",
        help="--serve-openai: every route but /health, /ready and /metrics needs the header "
        "'Authorization: Bearer KEY', a 401 without it (vLLM's --api-key; default: none, any "
        "client that reaches the address)",
    )
    parser.add_argument(
        "--openai-allowed-origins",
        type=_origins,
        metavar="ORIGINS",
        help="--serve-openai: comma-separated web origins whose pages may call the endpoint "
        "from a browser (CORS), e.g. http://localhost:3000, or * for any (default: none)",
    )


def check_endpoint_flags(args: argparse.Namespace) -> None:
    """A :class:`~edgespec.errors.UserInputError` naming an ``--openai-*`` flag given
    without ``--serve-openai`` (nothing would read it)."""
    from edgespec.errors import UserInputError

    if args.serve_openai is not None:
        return
    unset: dict[str, Any] = {name: default for name, (default, _) in SIZE_DEFAULTS.items()}
    for name, value in vars(args).items():
        if name.startswith("openai_") and value != unset.get(name):
            flag = "--" + name.replace("_", "-")
            raise UserInputError(f"{flag} applies to the endpoint: it needs --serve-openai")
