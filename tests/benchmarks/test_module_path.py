"""benchmarks/module_path.py: the default scenario's way from its YAML to the first round
resolves whole before it builds (no resolving or loading module visited once building
starts), and the count's arithmetic."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "module_path.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("module_path", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["module_path"] = module  # its dataclass looks its module up by name
    spec.loader.exec_module(module)
    return module


MODULE_PATH = _load()
LOADING = {
    "edgespec.sim.setup.resolve",
    "edgespec.sim.setup.sources",
    "edgespec.sim.setup.workload",
    "edgespec.hardware.cost_models",
    "edgespec.hardware.wisp",
}


def test_counts() -> None:
    path = MODULE_PATH.ModulePath(("a", "b", "a", "c", "b"))
    assert (path.num_modules, path.num_returns) == (3, 2)


def test_the_default_scenario_resolves_whole_before_building() -> None:
    visits = MODULE_PATH.measure("default").visits
    build = visits.index("edgespec.sim.setup.build")
    assert visits.index("edgespec.sim.setup.resolve") < build
    assert visits.index("edgespec.hardware.cost_models") < build
    assert LOADING.isdisjoint(visits[build:])
