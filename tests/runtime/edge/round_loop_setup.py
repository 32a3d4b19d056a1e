"""The hand-built generation the drafter-loop tests run (no model).

Prompt (5,), 7 new tokens, the draft wrong at its third token, the toy target of
:mod:`tests.runtime.round_fakes`: round 1 drafts 4 (γ 4), accepts 2, commits 6 7 8;
round 2 drafts 3 (γ capped at 7 − 3 − 1), commits 9 10 11; round 3 is a plain target
step (γ capped at 0), commits 12."""

from __future__ import annotations

from collections.abc import Callable

from edgespec.core.types import SamplingParams
from edgespec.policies.interfaces import WindowPolicy
from edgespec.policies.stop_drafting import DraftStopPolicy
from edgespec.runtime.edge.drafter import DraftOptions, GenerationResult, generate
from tests.runtime.round_fakes import Clock, Drafter, Verifier

PROMPT = (5,)
GREEDY = SamplingParams(temperature=0.0, max_new_tokens=7, seed=3)
OUTPUT = (6, 7, 8, 9, 10, 11, 12)
OPTIONS = DraftOptions(session_id="s", slo_class="gold", retry_backoff_s=0.0)


def run_loop(
    verifier: Verifier,
    clock: Clock,
    drafter: Drafter | None = None,
    window: WindowPolicy | None = None,
    on_tokens: Callable[[tuple[int, ...]], None] | None = None,
    stop: DraftStopPolicy | None = None,
    options: DraftOptions = OPTIONS,
) -> GenerationResult:
    """Generate OUTPUT from PROMPT with ``verifier`` (``drafter`` default: a :class:`Drafter`)."""
    drafter = drafter if drafter is not None else Drafter(clock)
    return generate(
        verifier, drafter, PROMPT, GREEDY, options, window, on_tokens, clock=clock, stop=stop
    )
