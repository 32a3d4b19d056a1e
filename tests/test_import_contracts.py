"""Every module of a package whose floors pyproject.toml's import-linter contracts list one by
one is named in a floor: a module named in none is in no floor, so lint-imports checks none
of its imports (edgespec/runtime/compact_probs.py was, and nothing said so)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONTRACTS: list[dict[str, Any]] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"][
    "importlinter"
]["contracts"]
ROOT_PACKAGE = "edgespec"


def _layered() -> list[Any]:
    """Each layers contract: its name, the package it layers (its container, or the root
    package), and the modules its floors name, relative to that package."""
    found = []
    for contract in CONTRACTS:
        if contract["type"] != "layers":
            continue
        named = [
            name.strip()
            for layer in contract["layers"]
            for name in layer.replace(":", "|").split("|")
        ]
        for container in contract.get("containers", [ROOT_PACKAGE]):
            relative = [name.removeprefix(f"{container}.") for name in named]
            found.append(pytest.param(contract["name"], container, relative, id=container))
    return found


def modules_of(package: str) -> set[str]:
    """The top-level modules and subpackages of ``package`` (dotted, under ROOT)."""
    folder = ROOT.joinpath(*package.split("."))
    modules = {
        path.stem for path in folder.glob("*.py") if path.stem not in ("__init__", "__main__")
    }
    return modules | {path.name for path in folder.iterdir() if (path / "__init__.py").is_file()}


@pytest.mark.parametrize(("name", "container", "named"), _layered())
def test_every_module_of_a_layered_package_is_in_a_floor(
    name: str, container: str, named: list[str]
) -> None:
    missing = sorted(modules_of(container) - set(named))
    assert missing == [], f"{container}: {missing} in no floor of the contract {name!r}"


def test_the_runtime_sim_and_root_are_layered() -> None:
    assert {param.id for param in _layered()} >= {
        "edgespec",
        "edgespec.runtime",
        "edgespec.sim",
    }
