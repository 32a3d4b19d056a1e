"""benchmarks/module_path.py: the default scenario's way from its YAML to the first round
resolves whole before it builds (no resolving or loading module visited once building
starts), and the count's arithmetic."""

from __future__ import annotations

from types import ModuleType

from tests.benchmarks.scripts import load_script


def _load() -> ModuleType:
    return load_script("module_path.py", "module_path")


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
