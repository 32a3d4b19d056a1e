"""An in-process engine serving the semantic rule with a hand-built decision head, and the
session (prompt, greedy sampling, channel) the semantic engine tests open on it."""

from __future__ import annotations

from typing import Any

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.messages import SemanticSpec, SessionSpec
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.semantic import semantic_rules
from tests.runtime.semantic_helpers import draft_coordinate_head

PROMPT = (3, 1, 4, 1, 5)
GREEDY = SamplingParams(max_new_tokens=16)
GOOD = SemanticSpec(threshold=12, uplink_bps=20e6)


def semantic_engine(target: TransformersTarget, head: Any = None) -> VerificationEngine:
    """An engine whose semantic rule uses ``head`` (default :func:`draft_coordinate_head`)."""
    return VerificationEngine(target, rules=semantic_rules(head or draft_coordinate_head()))


def open_semantic(
    engine: VerificationEngine, sid: str, semantic: SemanticSpec | None = GOOD, **kw: Any
) -> None:
    """Open session ``sid`` on PROMPT: semantic with ``semantic``, exact when it is None."""
    rule = "semantic" if semantic is not None else "exact"
    spec = SessionSpec(
        sid,
        "c",
        PROMPT,
        kw.pop("sampling", GREEDY),
        verification_rule=rule,
        semantic=semantic,
        **kw,
    )
    engine.open_session(spec)
