"""Which simulator a scenario is for: its top-level ``system:`` key, read alike by
``edgespec sim`` (:mod:`edgespec.sim.setup.system`) and ``edgespec drafting-server --plan``
(:func:`edgespec.hardware.drafting_plan.load_planning`).

- ``fleet`` (the default): distributed speculative decoding, devices drafting for
  verification servers (:mod:`edgespec.sim.simulator`, a
  :class:`~edgespec.sim.setup.scenario.Scenario`);
- ``drafting_server``: Zhu et al.'s edge drafting server, one drafting server batching
  its users' drafts for a verifier (:mod:`edgespec.sim.drafting_server`, a
  :class:`~edgespec.sim.drafting_server.scenario.PipelineScenario`), the system
  ``edgespec drafting-server`` serves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from edgespec.config import ConfigError
from edgespec.errors import did_you_mean

System = Literal["fleet", "drafting_server"]
SYSTEMS: tuple[System, ...] = ("fleet", "drafting_server")


def system_of(data: Mapping[str, Any]) -> System:
    """The system scenario mapping ``data`` names (``fleet`` without a ``system:`` key);
    an unknown system, or a drafting server's ``pipeline:`` section in a fleet scenario,
    is a :class:`ConfigError` at ``system`` saying what to write."""
    system = data.get("system", "fleet")
    for known in SYSTEMS:
        if system == known:
            if known == "fleet" and "pipeline" in data:
                raise ConfigError("system", _pipeline_in_fleet(given="system" in data))
            return known
    shown = "null" if system is None else repr(system)  # as YAML writes it
    raise ConfigError(
        "system",
        f"unknown system {shown}; known: {list(SYSTEMS)}" + did_you_mean(str(system), SYSTEMS),
    )


def _pipeline_in_fleet(*, given: bool) -> str:
    """What to write when a fleet scenario has a ``pipeline:`` section: ``given``, when the
    scenario (or an override) says ``system: fleet``, rather than leaving it out."""
    if not given:
        return (
            "a 'pipeline:' section configures the drafting-server simulator (Zhu et al.): "
            "add 'system: drafting_server'"
        )
    return (
        "is fleet, but the 'pipeline:' section configures the drafting-server simulator "
        "(Zhu et al.): set 'system: drafting_server', or drop the section for a fleet scenario"
    )
