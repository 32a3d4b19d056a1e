"""The ``edgespec`` command line: sim | serve | draft | trace | profile | train | bench | reproduce.

A built subcommand is a module listed in ``COMMAND_MODULES`` that defines
``add_arguments(parser)`` and ``run(args) -> int``; it keeps its top-level imports light
(torch and grpc are imported inside ``run``) so ``edgespec --help`` stays fast. A
subcommand that is not built yet says so and exits with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from edgespec import __version__
from edgespec.errors import UserInputError

Handler = Callable[[argparse.Namespace], int]

SUBCOMMANDS: dict[str, str] = {
    "sim": "run the discrete-event simulator (default scenario when no file is given)",
    "serve": "run the gRPC verification server hosting a target model",
    "draft": "run an edge drafter client against a verification server",
    "trace": "capture acceptance traces from a real draft/target model pair",
    "profile": "measure verification latency on this machine and fit cost models",
    "train": "train a draft model or a learned policy",
    "bench": "benchmark the simulator or the runtime",
    "reproduce": "re-run a paper's table or figure",
}


def _not_built(name: str) -> Handler:
    def handler(args: argparse.Namespace) -> int:
        print(f"edgespec {name}: not built yet in this version ({__version__}).", file=sys.stderr)
        return 2

    return handler


# Built subcommands: name → module defining add_arguments(parser) and run(args).
COMMAND_MODULES: dict[str, str] = {
    "sim": "edgespec.experiments.sim_command",
    "bench": "edgespec.sim.bench",
    "serve": "edgespec.runtime.serve_command",
    "draft": "edgespec.runtime.draft_command",
    "trace": "edgespec.learn.trace_command",
    "train": "edgespec.learn.train_command",
    "profile": "edgespec.learn.profile_command",
    "reproduce": "edgespec.experiments.reproduce_command",
}


def _registered() -> dict[str, tuple[Callable[[argparse.ArgumentParser], None], Handler]]:
    built = {}
    for name, module_name in COMMAND_MODULES.items():
        module = importlib.import_module(module_name)
        built[name] = (module.add_arguments, module.run)
    return built


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="edgespec",
        description="Distributed speculative decoding for edge-cloud LLM serving.",
    )
    parser.add_argument("--version", action="version", version=f"edgespec {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    built = _registered()
    for name, help_text in SUBCOMMANDS.items():
        if name in built:
            add_arguments, handler = built[name]
            p = sub.add_parser(name, help=help_text, description=help_text)
            add_arguments(p)
        else:
            p = sub.add_parser(name, help=f"{help_text} [not built yet]", description=help_text)
            p.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
            handler = _not_built(name)
        p.set_defaults(handler=handler, subparser=p)
    return parser


# Subcommands whose positional list (this attribute) takes ``key.path=value`` overrides:
# those given after an option are theirs too (argparse takes only the first run of them).
LATE_POSITIONALS: dict[str, str] = {"sim": "args", "bench": "overrides"}


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    args, extra = parser.parse_known_args(argv)
    if not extra:
        return args
    dest = LATE_POSITIONALS.get(args.command or "")
    if dest is not None and not any(item.startswith("-") for item in extra):
        getattr(args, dest).extend(extra)
        return args
    where: argparse.ArgumentParser = getattr(args, "subparser", parser)
    where.error(f"unrecognized arguments: {' '.join(extra)}")  # exits with status 2
    raise AssertionError("unreachable")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = _parse(parser, argv)
    if args.command is None:
        parser.print_help()
        return 0
    handler: Handler = args.handler
    try:
        return handler(args)
    except UserInputError as exc:
        print(f"edgespec {args.command}: {exc}", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:
        print(f"edgespec {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
