"""``edgespec draft``'s emulated-link flags (:mod:`edgespec.runtime.wire.emulated_link`):
``--link-rtt-ms``, ``--link-jitter-ms``, ``--link-bandwidth-mbps``, ``--link-seed`` and
``--link-draft-probs``, and
the config overrides they make (``link_*`` fields of the drafter's config), each value
checked as the link checks it, the error naming its flag."""

from __future__ import annotations

import argparse

from edgespec.core.link_delay import link_setting_problem
from edgespec.errors import UserInputError

LINK_FLAGS = {
    "link_rtt_ms": "--link-rtt-ms",
    "link_jitter_ms": "--link-jitter-ms",
    "link_bandwidth_mbps": "--link-bandwidth-mbps",
}


def add_link_arguments(parser: argparse.ArgumentParser) -> None:
    """``--link-rtt-ms`` / ``--link-jitter-ms`` / ``--link-bandwidth-mbps`` / ``--link-seed`` /
    ``--link-draft-probs``."""
    group = parser.add_argument_group(
        "emulated link (off by default: no delay, unlimited bandwidth, a fresh jitter seed)"
    )
    group.add_argument("--link-rtt-ms", type=float, metavar="MS", help="added round-trip time")
    group.add_argument(
        "--link-jitter-ms", type=float, metavar="MS", help="mean exponential jitter per message"
    )
    group.add_argument(
        "--link-bandwidth-mbps", type=float, metavar="MBIT/S", help="link bandwidth (0: unlimited)"
    )
    group.add_argument("--link-seed", type=int, metavar="N", help="seed of the jitter draws")
    group.add_argument(
        "--link-draft-probs",
        choices=("dense", "compact"),
        help="a sampled block's draft distributions counted as dense fp16 rows over the "
        "vocabulary (default, the papers' and the simulator's default) or as the compact rows "
        "gRPC sends (each row's kept tokens)",
    )


def link_overrides(args: argparse.Namespace) -> list[str]:
    """Config overrides for the link flags given; a bad value is a
    :class:`UserInputError` naming its flag."""
    out: list[str] = []
    for key, flag in LINK_FLAGS.items():
        value = getattr(args, key)
        if value is None:
            continue
        problem = link_setting_problem(key, value)
        if problem is not None:
            raise UserInputError(f"{flag} {problem}")
        out.append(f"{key}={value!r}")
    if args.link_seed is not None:
        out.append(f"link_seed={args.link_seed}")
    if args.link_draft_probs is not None:
        out.append(f"link_draft_probs={args.link_draft_probs}")
    return out
