"""The runtime stands on its own: no module under edgespec/runtime imports edgespec.sim
(at module level, inside a function or under TYPE_CHECKING alike). What both hosts share
lives outside the simulator (edgespec.policies, edgespec.hardware, edgespec.config)."""

from __future__ import annotations

import ast
from pathlib import Path

import edgespec

ROOT = Path(edgespec.__file__).parent.parent
"""The folder holding the edgespec package."""


def imported_modules(path: Path, root: Path = ROOT) -> set[str]:
    """Every module the file ``path`` (under ``root``) imports, ``from x import y`` as
    both ``x`` and ``x.y``; relative imports resolved against its package."""
    parts = path.relative_to(root).with_suffix("").parts
    package = list(parts[:-1])
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package[: len(package) - (node.level - 1)]
                base = ".".join([*parent, base] if base else parent)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _from_sim(name: str) -> bool:
    return name == "edgespec.sim" or name.startswith("edgespec.sim.")


def test_no_runtime_module_imports_the_simulator() -> None:
    files = sorted(p for p in (ROOT / "edgespec" / "runtime").rglob("*.py"))
    assert len(files) > 20
    offenders = sorted(
        f"{path.relative_to(ROOT)}: {name}"
        for path in files
        for name in imported_modules(path)
        if _from_sim(name)
    )
    assert not offenders


def test_the_walk_sees_every_kind_of_import(tmp_path: Path) -> None:
    """The checker itself: plain, from-, relative, TYPE_CHECKING and function-level
    imports of the simulator are all found, and a real runtime import is seen."""
    fake = tmp_path / "edgespec" / "runtime" / "x.py"
    fake.parent.mkdir(parents=True)
    fake.write_text(
        "from typing import TYPE_CHECKING\n"
        "import edgespec.sim.kernel\n"
        "from edgespec import sim\n"
        "from ..sim.setup import build\n"
        "if TYPE_CHECKING:\n"
        "    from edgespec.sim.setup.scenario import Scenario\n"
        "def f() -> None:\n"
        "    from edgespec.sim.simulator import simulate\n"
    )
    assert {n for n in imported_modules(fake, tmp_path) if _from_sim(n)} == {
        "edgespec.sim",
        "edgespec.sim.kernel",
        "edgespec.sim.setup",
        "edgespec.sim.setup.build",
        "edgespec.sim.setup.scenario",
        "edgespec.sim.setup.scenario.Scenario",
        "edgespec.sim.simulator",
        "edgespec.sim.simulator.simulate",
    }
    batching = ROOT / "edgespec" / "runtime" / "server" / "batching.py"
    assert "edgespec.hardware.wisp" in imported_modules(batching)
