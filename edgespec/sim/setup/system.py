"""Which simulator a scenario is for: its top-level ``system:`` key (``fleet``, the default,
or ``drafting_server``). The rule is :mod:`edgespec.hardware.scenario_system`'s, which
``edgespec drafting-server --plan`` reads scenarios by too. A fleet scenario's field in a
drafting-server scenario is refused saying whose it is (:func:`refuse_fleet_fields`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from typing import Any

from edgespec.config import ConfigError
from edgespec.hardware.scenario_system import SYSTEMS, System, system_of
from edgespec.sim.setup.scenario import Scenario

__all__ = ["SYSTEMS", "System", "refuse_fleet_fields", "system_of"]

DRAFTING_SERVER_SECTION = 'docs/SIMULATOR.md, "Edge drafting server (Zhu et al.)"'
"""Where the drafting-server scenario's fields are listed."""


def refuse_fleet_fields(data: Mapping[str, Any], own: Collection[str]) -> None:
    """Refuse the first top-level key of drafting-server scenario ``data`` that is not one
    of its ``own`` fields, when it is a fleet scenario's (``duration_s``, ``workload``):
    ``unknown field; known: [...]: duration_s is a fleet scenario's field ...``. Another
    unknown key is left to :func:`edgespec.config.from_dict` (it names the closest)."""
    fleet = {f.name for f in dataclasses.fields(Scenario) if f.init}
    for key in data:
        if key in own:
            continue
        if key in fleet:
            raise ConfigError(
                str(key),
                f"unknown field; known: {sorted(own)}: {key} is a fleet scenario's field "
                "(system: fleet); a drafting-server scenario (system: drafting_server) has "
                f"its own, its settings under 'pipeline:' ({DRAFTING_SERVER_SECTION})",
            )
        return
