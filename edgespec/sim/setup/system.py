"""Which simulator a scenario is for: its top-level ``system:`` key (``fleet``, the default,
or ``drafting_server``). The rule is :mod:`edgespec.hardware.scenario_system`'s, which
``edgespec drafting-server --plan`` reads scenarios by too."""

from __future__ import annotations

from edgespec.hardware.scenario_system import SYSTEMS, System, system_of

__all__ = ["SYSTEMS", "System", "system_of"]
