"""The stop-predictor CLI options (``--stop-predictor``, ``--stop-threshold``) shared by
``edgespec draft`` and ``edgespec trace``, and the :class:`MlpStopPolicy` they name."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from edgespec.policies.stop_drafting import MlpStopPolicy


def add_stop_arguments(parser: argparse.ArgumentParser) -> None:
    """``--stop-predictor`` / ``--stop-threshold``, shared with ``edgespec trace``."""
    parser.add_argument(
        "--stop-predictor",
        metavar="FILE|bundled",
        help="end each block at a stop predictor's first predicted rejection (a JSON MLP "
        "predictor, or 'bundled'); the window's γ is then K_max (neural chain drafts only)",
    )
    parser.add_argument(
        "--stop-threshold",
        type=float,
        metavar="P",
        help="with --stop-predictor: keep a token when P(accepted) >= P "
        "(default: the predictor's own threshold)",
    )


def stop_policy_from_args(args: argparse.Namespace) -> MlpStopPolicy | None:
    """The predictor ``--stop-predictor`` names (``None`` without it); a missing or
    malformed file or a bad ``--stop-threshold`` is a :class:`UserInputError` naming
    the flag."""
    from edgespec.errors import UserInputError
    from edgespec.policies.stop_drafting import BUNDLED_STOP_PREDICTOR, load_stop_policy

    if args.stop_predictor is None:
        if args.stop_threshold is not None:
            raise UserInputError("--stop-threshold needs --stop-predictor")
        return None
    bundled = args.stop_predictor == "bundled"
    try:
        policy = load_stop_policy(None if bundled else args.stop_predictor)
    except FileNotFoundError as exc:
        raise UserInputError(
            f"--stop-predictor: the bundled predictor {BUNDLED_STOP_PREDICTOR} is not shipped "
            f"in this installation ({exc})"
        ) from exc
    except ValueError as exc:
        raise UserInputError(f"--stop-predictor: {exc}") from exc
    if args.stop_threshold is None:
        return policy
    try:
        return policy.with_threshold(args.stop_threshold)
    except ValueError as exc:
        raise UserInputError(f"--stop-threshold: {exc}") from exc
