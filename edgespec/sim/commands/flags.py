"""``edgespec sim``'s flags: the parser, and the checks that run before anything does.

A run is one of four kinds: a plain run, ``--sweep``, ``--capacity`` or ``--shards``.
Some flags act only in some kinds (``APPLIES``); one given where it has no effect is a
user error naming the flag and where it applies, not silently ignored. Those flags
default to ``None`` in the parser so a given flag can be told from its default;
``check_flags`` then fills the defaults in (``DEFAULTS``).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from edgespec.argument_types import positive_int
from edgespec.arguments import add_quiet
from edgespec.config import field_type, key_path, parse_override, type_text
from edgespec.config.overrides import shown
from edgespec.errors import UserInputError
from edgespec.output_paths import output_folder
from edgespec.sweeps.executor import MAX_CLUSTER_WORKERS, WORKERS_PER_CPU, check_workers

DEVICE_COUNT = re.compile(r"auto_topology\.devices\.\d+\.count")
"""The keys ``--capacity`` searches: a device pool's count."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from edgespec.config.scenario_files import bundled_scenarios

    parser.add_argument(
        "args",
        nargs="*",
        metavar="[SCENARIO] [key.path=value ...]",
        help="scenario: a YAML file or a bundled scenario's name, which works from any "
        f"folder ({', '.join(bundled_scenarios())}; default when none is given); "
        "then key.path=value overrides",
    )
    parser.add_argument(
        "--out", type=output_folder, default=None, help="run folder (default runs/<name>-<time>)"
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="--out may hold an earlier run: its run files are removed first (default: "
        "refused; needs --out)",
    )
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument(
        "--rounds",
        action="store_true",
        help="also write rounds.csv, rounds.parquet and the violation attribution "
        "(attribution.json, .png), as the scenario key record_rounds: true does "
        "(plain run, --shards)",
    )
    parser.add_argument(
        "--sweep",
        nargs="+",
        action="extend",
        metavar="key=v1,v2,...",
        default=None,
        help="run the cartesian product of these values (one run per point); --sweep may "
        "be given more than once. It takes every argument up to the next option as a sweep "
        "spec, a one-value key=v too (a sweep column): plain overrides go before --sweep",
    )
    parser.add_argument(
        "--capacity",
        metavar="KEY",
        default=None,
        help="capacity search (WISP Eq. 20): largest integer KEY with violation rate <= epsilon",
    )
    parser.add_argument(
        "--lo", type=int, help=f"--capacity: search lower bound (default {DEFAULTS['lo']})"
    )
    parser.add_argument(
        "--hi", type=int, help=f"--capacity: search upper bound (default {DEFAULTS['hi']})"
    )
    parser.add_argument(
        "--epsilon",
        type=float,
        help=f"--capacity: allowed SLO violation rate (default {DEFAULTS['epsilon']})",
    )
    parser.add_argument(
        "--slo-class",
        metavar="NAME",
        help="--capacity: count only this SLO class's violations (Cap(τ) of one class)",
    )
    parser.add_argument(
        "--count-sure-misses",
        action="store_true",
        help="--capacity: count the requests unfinished at a run's end that are already sure "
        "to miss their target as violations too (default: finished requests only, as WISP's "
        "Eq. 20)",
    )
    add_quiet(parser)
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="plain run: also say which event-loop path ran and why",
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        help="--sweep runs (or --shards) on this many processes, never more than runs (Ray: "
        f"CPUs, or tasks in flight; default {DEFAULTS['workers']}; at most "
        f"{WORKERS_PER_CPU} per CPU, {MAX_CLUSTER_WORKERS:,} with --address)",
    )
    parser.add_argument(
        "--shards",
        type=positive_int,
        metavar="N",
        help="run a scenario whose device pools are pinned to server pools as N >= 1 shards "
        "of its cells, merged (metrics identical to one process; docs/SIMULATOR.md)",
    )
    parser.add_argument(
        "--engine",
        choices=["local", "ray"],
        help="where --sweep runs and --shards execute: local processes (default) or Ray tasks",
    )
    parser.add_argument(
        "--address", help="Ray cluster address (--engine ray; default: a local Ray)"
    )


MODES = {"--sweep": "sweep", "--capacity": "capacity", "--shards": "shards"}
"""The flags that each pick what kind of run ``edgespec sim`` makes."""

PLAIN = "a plain run"

APPLIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "--rounds": ("rounds", (PLAIN, "--shards")),
    "--verbose": ("verbose", (PLAIN,)),
    "--lo": ("lo", ("--capacity",)),
    "--hi": ("hi", ("--capacity",)),
    "--epsilon": ("epsilon", ("--capacity",)),
    "--slo-class": ("slo_class", ("--capacity",)),
    "--count-sure-misses": ("count_sure_misses", ("--capacity",)),
    "--workers": ("workers", ("--sweep", "--shards")),
    "--engine": ("engine", ("--sweep", "--shards")),
    "--address": ("address", ("--sweep", "--shards")),
}
"""flag → (its argparse dest, the run kinds it acts in); other flags act in every kind."""

DEFAULTS: dict[str, Any] = {"lo": 1, "hi": 1000, "epsilon": 0.05, "workers": 1, "engine": "local"}
"""The values of the flags above that default to ``None`` in the parser."""


def _given(value: Any) -> bool:
    return value is not None and value is not False


def names_a_file(item: str) -> bool:
    """``item`` names a file (an override too long to be a file name names none)."""
    try:
        return Path(item).is_file()
    except OSError:  # e.g. ENAMETOOLONG: an override over 255 bytes
        return False


def _is_scenario(item: str) -> bool:
    """``item`` names a scenario: a file, or a bundled scenario's name."""
    from edgespec.config.scenario_files import scenario_path

    try:
        return scenario_path(item).is_file()
    except (UserInputError, OSError):  # OSError: too long to be a file name
        return False


def check_flags(args: argparse.Namespace) -> None:
    """Flags that contradict each other, are out of range or would have no effect, before
    anything runs; then the defaults of the flags that were not given."""
    modes = [flag for flag, dest in MODES.items() if _given(getattr(args, dest))]
    if len(modes) > 1:
        raise UserInputError(f"{' and '.join(modes)} exclude each other; give one")
    kind = modes[0] if modes else PLAIN
    for flag, (dest, kinds) in APPLIES.items():
        if _given(getattr(args, dest)) and kind not in kinds:
            raise UserInputError(f"{flag} applies only to {' or '.join(kinds)}, not to {kind}")
    for dest, value in DEFAULTS.items():
        if getattr(args, dest) is None:
            setattr(args, dest, value)
    if args.address is not None and args.engine != "ray":
        raise UserInputError("--address is a Ray cluster address: it needs --engine ray")
    check_workers(args.workers, args.address)
    for item in args.sweep or ():
        if "=" not in item and _is_scenario(item):
            raise UserInputError(
                f"--sweep {item}: a scenario file goes before --sweep "
                "(--sweep takes every argument up to the next option as a key=v1,v2,... spec)"
            )
    if args.capacity is not None:
        if not args.capacity.strip():
            raise UserInputError(
                "--capacity needs a scenario key, e.g. auto_topology.devices.0.count"
            )
        if "=" in args.capacity:
            raise UserInputError(
                f"--capacity {shown(args.capacity)}: KEY is a scenario key without a value "
                "(the search sets its values from --lo to --hi)"
            )
        key_path(args.capacity, args.capacity, "--capacity")
        if not 1 <= args.lo <= args.hi:  # KEY is a device pool's count: at least 1
            raise UserInputError(f"need 1 <= --lo <= --hi, got --lo {args.lo} --hi {args.hi}")
        if not 0.0 <= args.epsilon <= 1.0:
            raise UserInputError(f"--epsilon must be in [0, 1], got {args.epsilon}")


def check_not_overridden(args: argparse.Namespace, overrides: list[str]) -> None:
    """Refuse an override that a ``--sweep`` key or the ``--capacity`` key sets too (or a
    field inside it): every run would replace it, so it would act nowhere; one that
    ``--rounds`` contradicts (``record_rounds=false``: the flag won silently); and a
    ``--capacity`` key whose field takes no integer (:func:`check_capacity_key`)."""
    if args.capacity:
        check_capacity_key(args.capacity)
    for override in overrides if args.rounds else ():
        if parse_override(override) == (["record_rounds"], False):
            raise UserInputError(
                f"--rounds: the override {shown(override)} says the opposite; give one of them"
            )
    keys = [("--capacity", args.capacity, "capacity probe")] if args.capacity else []
    keys += [("--sweep", item, "sweep run") for item in args.sweep or () if "=" in item]
    for flag, text, run in keys:
        key = text.partition("=")[0]
        swept = key_path(text, key, flag)
        for override in overrides:
            if key_path(override, override.partition("=")[0])[: len(swept)] == swept:
                name = shown(".".join(swept))
                raise UserInputError(
                    f"{flag} {name}: the override {shown(override)} sets it too, and each "
                    f"{run} would replace that; give {name} in one place"
                )


def check_capacity_key(key: str) -> None:
    """Refuse a ``--capacity`` KEY that is not a device pool's count. The search is WISP
    Eq. 20 (the most devices whose violation rate is within ε): it bisects, assuming the
    rate grows with KEY. That holds for a device count; other integers break it (more
    servers lower the rate, a seed or a batch cap moves it either way), and the search
    would return a number that means nothing."""
    from edgespec.sim.setup.scenario import Scenario
    from edgespec.sweeps.capacity import field_path

    path = key_path(key, key, "--capacity")
    if DEVICE_COUNT.fullmatch(".".join(path)):
        return
    tp = field_type(Scenario, path)
    if tp is not None and tp is not int:
        raise UserInputError(
            f"--capacity {shown(key)}: scenario field {shown(field_path(key))} is "
            f"{type_text(tp)}, not an integer (the search sets whole numbers); give an "
            "integer count, e.g. auto_topology.devices.0.count"
        )
    raise UserInputError(
        f"--capacity {shown(key)}: the search finds the most devices within --epsilon "
        "(WISP Eq. 20), assuming violations grow with KEY; give a device pool's count, "
        "auto_topology.devices.<i>.count"
    )
