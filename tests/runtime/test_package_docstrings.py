"""The runtime's layout lives in its package docstrings (docs/RUNTIME.md, "Where the code
is"): each package's ``__init__.py`` names every module beside it as ``:mod:`.name```, and
names no module that does not exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

RUNTIME = Path(__file__).resolve().parents[2] / "edgespec" / "runtime"
PACKAGES = sorted(p.parent for p in RUNTIME.rglob("__init__.py"))
_MOD = re.compile(r":mod:`\.(\w+)")


def _named(package: Path) -> set[str]:
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    return set(_MOD.findall(doc))


def _modules(package: Path) -> set[str]:
    found = {p.stem for p in package.glob("*.py") if p.stem != "__init__"}
    found |= {p.parent.name for p in package.glob("*/__init__.py")}
    return {name for name in found if not name.endswith(("_pb2", "_pb2_grpc"))}


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: str(p.relative_to(RUNTIME.parent)))
def test_each_module_is_named_in_its_package_docstring(package: Path) -> None:
    named, modules = _named(package), _modules(package)
    assert not modules - named, f"{package.name}: not in the docstring: {sorted(modules - named)}"
    assert not named - modules, f"{package.name}: no such module: {sorted(named - modules)}"
