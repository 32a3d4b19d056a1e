"""How the docs tests validate the ``key.path=value`` overrides a doc quotes: those of an
``edgespec sim`` / ``bench sim`` line against its scenario file (each ``--sweep`` value
and the ``--capacity`` key too), those of ``serve`` and ``draft`` (``--set``) against their
configs; an all-caps placeholder value (``N``, ``N/50``) only has to fit some type."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from edgespec.config import ConfigError, load_config, read_yaml
from edgespec.config.scenario_files import (
    bundled_scenarios,
    default_scenario_path,
    scenario_path,
)
from edgespec.policies.registry import KINDS
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.server.config import ServerConfig
from edgespec.sim.drafting_server.scenario import pipeline_scenario_from_dict
from edgespec.sim.setup.scenario import Scenario, scenario_from_dict
from edgespec.sim.setup.system import system_of
from edgespec.sweeps.grid import override_text, parse_grid
from tests.doc_checks import ROOT
from tests.doc_snippets import Parsed

_PLACEHOLDER_VALUE = re.compile(r"[A-Z][A-Z0-9_]*(?:[/*+-]\d+)?")


Validate = Callable[[list[str]], object]


def _is_placeholder(text: str) -> bool:
    return bool(_PLACEHOLDER_VALUE.fullmatch(text.partition("=")[2].strip()))


def _owns(key: str, error: ConfigError) -> bool:
    """Whether ``error`` is about field ``key`` (or a parent or child of it), not about
    another field that the override only made inconsistent."""
    path = re.sub(r"\[(\d+)\]", r".\1", error.path)
    return path == key or path.startswith(key + ".") or key.startswith(path + ".")


def own_error(validate: Validate, text: str) -> str | None:
    """The error ``text`` alone causes in its own field; for an all-caps placeholder value
    (``N``, ``N/50``), None when some value of some type fits."""
    key = text.partition("=")[0]
    tries = [text]
    if _is_placeholder(text):
        values: tuple[object, ...] = (1, 1.5, "x", True, [], {})
        tries = [override_text(key, v) for v in values]
    errors = []
    for attempt in tries:
        try:
            validate([attempt])
            return None
        except ConfigError as exc:
            if not _owns(key, exc):
                return None
            errors.append(str(exc))
    return errors[0]


def override_problems(validate: Validate, texts: list[str]) -> list[str]:
    """Problems with a command's overrides: the literal ones must validate together (unless
    placeholders could make up the difference), and none may be wrong in its own field."""
    literal = [t for t in texts if not _is_placeholder(t)]
    try:
        validate(literal)
        texts = [t for t in texts if _is_placeholder(t)]
        joint = None
    except ConfigError as exc:
        joint = None if len(literal) < len(texts) else str(exc)
    own = [f"`{t}`: {e}" for t in texts if (e := own_error(validate, t)) is not None]
    return own or ([f"`{' '.join(literal)}` together: {joint}"] if joint else [])


def _policy_names(scenario: Scenario) -> None:
    for kind in ("routing", "batching", "window"):
        name = getattr(scenario.policies, kind).name
        if name not in KINDS[kind]:
            raise ConfigError(f"policies.{kind}.name", f"unknown policy {name!r}")


@cache
def scenario_validator(base: Path) -> Validate:
    """Validates overrides as ``edgespec sim`` does on scenario file ``base``."""
    data = read_yaml(base)

    def validate(texts: list[str]) -> None:
        if system_of(data) == "drafting_server":  # edgespec/sim/drafting_server
            pipeline_scenario_from_dict(data, texts)
        else:
            _policy_names(scenario_from_dict(data, texts))

    return validate


def config_validator(cls: type[Any]) -> Validate:
    """Validates overrides as ``--set`` does on config ``cls``."""
    return lambda texts: load_config(cls, None, texts)


def sim_overrides(parsed: Parsed) -> tuple[Path, list[str], list[str], list[str]] | None:
    """The scenario file, the overrides, the alternatives (each ``--sweep`` value, the
    ``--capacity`` key at an integer) and the malformed sweep specs of a parsed ``sim`` /
    ``bench sim`` line."""
    values = parsed.values
    if parsed.chain == ("bench", "sim"):
        bench = default_scenario_path().with_name("bench.yaml")
        return bench, values.get("overrides", []), [], []
    if parsed.chain != ("sim",):
        return None
    named = [a for a in values.get("args", []) if "=" not in a]
    base = default_scenario_path()
    if named and (ROOT / named[0]).is_file():
        base = ROOT / named[0]
    elif named and named[0] in bundled_scenarios():
        base = scenario_path(named[0])
    alternatives = [f"{key}=1" for key in values.get("capacity", [])]
    bad = []
    for spec in values.get("sweep", []):
        try:
            grid = parse_grid([spec]) if spec not in ("...", "…") else {}
        except ConfigError as exc:
            bad.append(f"`--sweep {spec}`: {exc}")
            continue
        alternatives += [override_text(k, v) for k, vs in grid.items() for v in vs]
    return base, [a for a in values.get("args", []) if "=" in a], alternatives, bad


CONFIGS: dict[tuple[str, ...], type[Any]] = {("serve",): ServerConfig, ("draft",): DrafterConfig}
