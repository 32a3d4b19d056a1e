"""Which scenario file a command line names: a file that exists, else a bundled scenario
(``edgespec/data/scenarios/``) by name. One resolver for both hosts of a scenario,
``edgespec sim SCENARIO`` and ``edgespec drafting-server --plan SCENARIO``, so a name works
(and a near miss is refused with the same hint) in both."""

from __future__ import annotations

import errno
import os
from importlib import resources
from pathlib import Path

from edgespec.config.errors import ConfigFileError
from edgespec.config.overrides import shown
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
    bench-cells.yaml``), so a name works from any folder (one holding a folder of that
    name too). For anything else a
    :class:`UserInputError` (a text without a YAML suffix may have been meant as an
    override, and it says so) that ends with the closest bundled name, if one is close;
    a symlink that leads nowhere (a loop, a missing target) is said to be one.
    """
    path, text = Path(text), str(text)
    suffix = next((s for s in SCENARIO_SUFFIXES if text.endswith(s)), "")
    name = text.removesuffix(suffix)
    names = bundled_scenarios()
    bundled = name in names and path.name == text  # a bare name, no folder
    if path.exists() and not (bundled and path.is_dir()):  # a folder does not hide it
        return path
    if bundled:
        return bundled_scenarios_dir() / f"{name}.yaml"
    _refuse_a_broken_link(path, text)
    hint = did_you_mean(name if path.name == text else path.stem, names)
    if not suffix:
        raise UserInputError(
            f"{text}: no such scenario file (an override looks like key.path=value){hint}"
        )
    raise ConfigFileError(text, f"file not found{hint}")


def _refuse_a_broken_link(path: Path, text: str) -> None:
    """A :class:`ConfigFileError` naming ``text`` when ``path`` is there but cannot be
    followed to a file: a symlink loop (in its own link or a folder's: ``symlink loop (Too
    many levels of symbolic links)``), a symlink to nothing (``symlink to 'x.yaml', which
    does not exist``); nothing when ``path`` is simply absent."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfigFileError(text, f"symlink loop ({exc.strerror})") from None
        if exc.errno == errno.ENOENT and path.is_symlink():
            target = shown(os.readlink(path))
            raise ConfigFileError(text, f"symlink to {target!r}, which does not exist") from None
