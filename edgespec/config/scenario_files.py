"""Which scenario file a command line names: a file that exists, else a bundled scenario
(``edgespec/data/scenarios/``) by name. One resolver for both hosts of a scenario,
``edgespec sim SCENARIO`` and ``edgespec drafting-server --plan SCENARIO``, so a name works
(and a near miss is refused with the same hint) in both."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from edgespec.config.errors import ConfigFileError
from edgespec.errors import UserInputError, did_you_mean

SCENARIO_SUFFIXES = (".yaml", ".yml")


def bundled_scenarios_dir() -> Path:
    """Where the bundled scenarios are: ``edgespec/data/scenarios/``."""
    return Path(str(resources.files("edgespec") / "data" / "scenarios"))


def bundled_scenarios() -> list[str]:
    """The bundled scenarios' names (their file names without ``.yaml``), sorted."""
    return sorted(p.stem for p in bundled_scenarios_dir().glob("*.yaml"))


def default_scenario_path() -> Path:
    return bundled_scenarios_dir() / "default.yaml"


def scenario_path(text: str | Path) -> Path:
    """The scenario file ``text`` names: a file that exists, else a bundled scenario by
    name, with or without ``.yaml`` (``bench-cells``: ``edgespec/data/scenarios/
    bench-cells.yaml``), so a name works from any folder. For anything else a
    :class:`UserInputError` (a text without a YAML suffix may have been meant as an
    override, and it says so) that ends with the closest bundled name, if one is close.
    """
    path, text = Path(text), str(text)
    if path.exists():
        return path
    suffix = next((s for s in SCENARIO_SUFFIXES if text.endswith(s)), "")
    name = text.removesuffix(suffix)
    names = bundled_scenarios()
    if name in names and path.name == text:  # a bare name, no folder
        return bundled_scenarios_dir() / f"{name}.yaml"
    hint = did_you_mean(name if path.name == text else path.stem, names)
    if not suffix:
        raise UserInputError(
            f"{text}: no such scenario file (an override looks like key.path=value){hint}"
        )
    raise ConfigFileError(text, f"file not found{hint}")
