"""``edgespec draft --serve-openai``'s limits: request sizes, generations at once, the queue
and the cap per client (:func:`add_endpoint_arguments`; the endpoint: docs/RUNTIME.md)."""

from __future__ import annotations

import argparse

from edgespec.argument_types import positive_int


def add_endpoint_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``--openai-max-*`` flags, each applying to ``--serve-openai`` only."""
    for flag, default, what in (
        ("--openai-max-body-bytes", 1 << 20, "request body bytes (413 beyond)"),
        ("--openai-max-prompt-tokens", 2048, "prompt tokens (400 beyond)"),
        ("--openai-max-tokens", 1024, "max_tokens a request may ask for (400 beyond)"),
    ):
        parser.add_argument(
            flag, type=positive_int, default=default,
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
