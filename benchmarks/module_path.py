"""The way a scenario takes from its YAML to the first round, in modules.

Loads a bundled scenario (default: ``default``), validates it and starts
:func:`edgespec.sim.simulator.simulate` on it, stopping when the event loop is about to
run (:meth:`edgespec.sim.kernel.EventQueue.run`: the first round starts there). Every
function of the ``edgespec`` package is recorded (:func:`sys.setprofile`) at its first
call, by the module it is defined in, so that a helper called per field or per trace
entry counts once and the count does not depend on how deep the calls nest; consecutive
records in one module are one visit. It prints:

- ``modules``: the distinct edgespec modules visited;
- ``returns``: visits to a module visited before (the way leaving a module and coming
  back to it, the measure of interleaving: resolving, building and validating in turns).

Usage: ``python benchmarks/module_path.py [SCENARIO] [--path]`` (``--path``: print the
visits in order, a return marked ``<-``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any


class _FirstRound(Exception):
    """Raised where the event loop would start: the measurement ends there."""


@dataclass(frozen=True, slots=True)
class ModulePath:
    """The visits in order (consecutive calls in one module collapsed)."""

    visits: tuple[str, ...]

    @property
    def num_modules(self) -> int:
        return len(set(self.visits))

    @property
    def num_returns(self) -> int:
        return len(self.visits) - self.num_modules


def _recorder(visits: list[str]) -> Callable[[FrameType, str, Any], None]:
    seen: set[CodeType] = set()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or frame.f_code in seen:
            return
        seen.add(frame.f_code)
        module = frame.f_globals.get("__name__", "")
        if not isinstance(module, str) or not module.startswith("edgespec"):
            return
        if not visits or visits[-1] != module:
            visits.append(module)

    return profile


def measure(name: str = "default") -> ModulePath:
    """The module path of bundled scenario ``name`` from its YAML to the first round."""
    # Imported before the measurement starts: the modules' import-time code is not the way.
    from edgespec.config import read_yaml
    from edgespec.config.scenario_files import scenario_path
    from edgespec.sim import simulator
    from edgespec.sim.kernel import EventQueue
    from edgespec.sim.setup.scenario import scenario_from_dict

    file = scenario_path(name)

    def stop(self: EventQueue, *args: Any, **kwargs: Any) -> None:
        raise _FirstRound

    visits: list[str] = []
    original = EventQueue.run
    EventQueue.run = stop  # type: ignore[method-assign]
    sys.setprofile(_recorder(visits))
    try:
        simulator.simulate(scenario_from_dict(read_yaml(file)))
    except _FirstRound:
        pass
    finally:
        sys.setprofile(None)
        EventQueue.run = original  # type: ignore[method-assign]
    return ModulePath(tuple(visits))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("scenario", nargs="?", default="default")
    parser.add_argument("--path", action="store_true", help="print the visits in order")
    args = parser.parse_args(argv)
    path = measure(args.scenario)
    if args.path:
        seen: set[str] = set()
        for module in path.visits:
            print(f"{'<-' if module in seen else '  '} {module}")
            seen.add(module)
    print(f"{args.scenario}: {path.num_modules} modules, {path.num_returns} returns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
