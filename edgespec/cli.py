"""The ``edgespec`` command line: sim | serve | draft | drafting-server | trace | profile |
calibrate | train | bench | reproduce | data.

A subcommand is a module listed in ``COMMAND_MODULES``, or a :class:`Group` in ``GROUPS``
whose first positional picks the module (``edgespec bench serve``). Each module defines
``add_arguments(parser)`` and ``run(args) -> int`` and keeps its top-level imports light
(torch and grpc are imported inside ``run``) so ``edgespec --help`` stays fast, and so that
:func:`quiet_grpc_logs` comes before gRPC reads its environment.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import signal
import sys
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass

from edgespec import __version__
from edgespec.errors import RunFailedError, UserInputError
from edgespec.policies.contracts import PolicyContractError
from edgespec.reproduce.command import PAPERS
from edgespec.runtime.commands.signals import Terminated, sigterm_raises, stopped

Handler = Callable[[argparse.Namespace], int]

SUBCOMMANDS: dict[str, str] = {
    "sim": "run the discrete-event simulator (default scenario when no file is given)",
    "serve": "run the gRPC verification server hosting a target model",
    "draft": "run an edge drafter client against a verification server",
    "drafting-server": "run a batched edge drafting server (one draft model, many sessions)",
    "trace": "capture acceptance traces from a real draft/target model pair",
    "profile": "measure verification latency on this machine and fit cost models",
    "calibrate": "run one small scenario for real and in the simulator, and compare them",
    "train": "train a draft model or a learned policy",
    "bench": "benchmark the simulator or the runtime",
    "reproduce": "re-run a paper's claims, or its system on the real runtime",
    "data": "rebuild the bundled data tables from the datasets",
}

# A built subcommand: a module defining add_arguments(parser) and run(args).
COMMAND_MODULES: dict[str, str] = {
    "sim": "edgespec.sim.commands.run",
    "serve": "edgespec.runtime.commands.serve",
    "draft": "edgespec.runtime.commands.draft",
    "drafting-server": "edgespec.runtime.commands.drafting_server",
    "trace": "edgespec.learn.traces.command",
    "train": "edgespec.learn.command",
    "profile": "edgespec.profiling.command",
    "calibrate": "edgespec.calibration.command",
}


@dataclass(frozen=True, slots=True)
class Group:
    """A subcommand whose first positional (stored as ``dest``) picks a module, each with
    its own flags: ``edgespec bench serve --clients 4``."""

    dest: str
    metavar: str
    members: dict[str, tuple[str, str]]  # name → (module, help)


SIM_BENCH = "edgespec.sim.commands.bench"
GROUPS: dict[str, Group] = {
    "bench": Group(
        "target",
        "TARGET",
        {
            "sim": (SIM_BENCH, "simulated verification rounds per second on bench.yaml"),
            "policy": (SIM_BENCH, "the batching policies' decision time"),
            "memory": (SIM_BENCH, "ns per random object access as the objects grow"),
            "prefix": (
                "edgespec.runtime.commands.bench_prefix",
                "a follow-up round on a cached prefix vs a cold start",
            ),
            "serve": (
                "edgespec.runtime.commands.bench_serve",
                "load a verification server: N clients, SLO mix, faults, outputs checked",
            ),
        },
    ),
    "reproduce": Group(
        "seed",
        "PAPER",
        {name: (paper.module, paper.help) for name, paper in PAPERS.items()},
    ),
    "data": Group(
        "what",
        "WHAT",
        {
            "lengths": (
                "edgespec.datasets.length_tables",
                "paired prompt/output token lengths (edgespec/data/lengths/)",
            ),
        },
    ),
}


def _add_group(parser: argparse.ArgumentParser, group: Group) -> None:
    sub = parser.add_subparsers(dest=group.dest, metavar=group.metavar, required=True)
    for name, (module_name, help_text) in group.members.items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(p)
        p.set_defaults(handler=module.run, subparser=p)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="edgespec",
        description="Distributed speculative decoding for edge-cloud LLM serving.",
    )
    parser.add_argument("--version", action="version", version=f"edgespec {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name in GROUPS:
            _add_group(p, GROUPS[name])
            continue
        module = importlib.import_module(COMMAND_MODULES[name])
        module.add_arguments(p)
        p.set_defaults(handler=module.run, subparser=p)
    return parser


# Subcommands whose positional list (this attribute) takes ``key.path=value`` overrides:
# those given after an option are theirs too (argparse takes only the first run of them).
LATE_POSITIONALS: dict[str, str] = {"sim": "args", "bench": "overrides"}


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    args, extra = parser.parse_known_args(argv)
    if not extra:
        return args
    dest = LATE_POSITIONALS.get(args.command or "")
    late = dest is not None and isinstance(getattr(args, dest, None), list)
    if late and dest is not None and not any(item.startswith("-") for item in extra):
        getattr(args, dest).extend(extra)
        return args
    where: argparse.ArgumentParser = getattr(args, "subparser", parser)
    where.error(f"unrecognized arguments: {' '.join(extra)}")  # exits with status 2
    raise AssertionError("unreachable")


GRPC_VERBOSITY = "ERROR"
"""gRPC core's log level in every ``edgespec`` command unless the user set ``GRPC_VERBOSITY``."""


def quiet_grpc_logs(environ: MutableMapping[str, str]) -> None:
    """gRPC's own log lines at errors only (``GRPC_VERBOSITY=ERROR``) unless ``environ``
    sets ``GRPC_VERBOSITY`` (non-empty): its INFO lines, such as a client's ``Got goaway
    [2] err=UNAVAILABLE:GOAWAY received ... connection idle`` after a server closed an idle
    connection, read as an outage. gRPC reads the variable when it is imported, so
    :func:`main` calls this before any command runs; the processes a command starts inherit
    it (docs/DEPLOY.md, step 3: how to get gRPC's logs back)."""
    if not environ.get("GRPC_VERBOSITY"):
        environ["GRPC_VERBOSITY"] = GRPC_VERBOSITY


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` names; its exit status. A refused input (a
    :class:`UserInputError`, a file that is missing or cannot be read or written) is one
    line and status 2, before or while the command runs, named by the whole command
    (``edgespec bench serve:``, ``edgespec reproduce wisp:``, as argparse names it); a
    policy whose answer breaks its contract (:class:`PolicyContractError`: the config was
    valid, the policy's code is at fault, as the server fails the calls concerned with
    ``INTERNAL``, not ``INVALID_ARGUMENT``) is one line and status 1, the status of a run
    that failed (a system error, a command's own failure); Ctrl-C, one line
    (``edgespec sim: interrupted``) and 130; SIGTERM, as Ctrl-C (:func:`sigterm_raises`:
    ``terminated``, 143), what the command made cleaned up as it unwinds."""
    quiet_grpc_logs(os.environ)  # before any command imports grpc
    parser = build_parser()
    args = _parse(parser, argv)
    if args.command is None:
        parser.print_help()
        return 0
    handler: Handler = args.handler
    name: str = args.subparser.prog  # "edgespec sim", "edgespec bench serve"
    try:
        with sigterm_raises():  # SIGTERM stops a command as Ctrl-C does
            return handler(args)
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's status for SIGINT
        return stopped(name.removeprefix("edgespec "), signal.SIGINT)
    except Terminated:  # SIGTERM (kill PID, systemd): one line, 143
        return stopped(name.removeprefix("edgespec "), signal.SIGTERM)
    except UserInputError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 2
    except (PolicyContractError, RunFailedError) as exc:  # its code or its machine, not input
        print(f"{name}: {exc}", file=sys.stderr)
        return 1
    except FileNotFoundError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a path that cannot be written or read: named, one line
        if exc.filename is not None:
            print(f"{name}: {exc.filename}: {exc.strerror}", file=sys.stderr)
            return 2
        if exc.errno is None:
            raise
        # The system failed, not the user (a full disk while records stream, a port in use).
        print(f"{name}: {exc.strerror} (errno {exc.errno})", file=sys.stderr)
        return 1


def console_main(argv: Sequence[str] | None = None) -> int:
    """The ``edgespec`` program (and ``python -m edgespec.cli``): :func:`main`, then, as
    the process is about to end, its objects frozen out of the garbage collector's reach
    (``gc.freeze``). Python's collections at exit walk every object the run made: a second
    after torch and a model have loaded (``edgespec serve`` stopped, ``edgespec draft``
    done), for nothing, since the process ends; files and sessions were closed as the
    command returned. Not for callers that go on running (tests, embedding programs):
    they call :func:`main`."""
    status = main(argv)
    gc.freeze()
    return status


if __name__ == "__main__":
    sys.exit(console_main())
