"""A session waiting between the parts of its prefill, most of its context cached, is
evicted before the parts of the batch just run (server/prefill_parts.eviction_order): it
was kept as the one furthest on, while its own last pass did not fit beside the batch's
oldest entry (the KV budget bounds a batch's context), so after every batch the budget
evicted the running parts instead and no session advanced (a server at full CPU, six
clients stuck for good under ``kv_budget_tokens=60 prefill_part_tokens=3``)."""

from __future__ import annotations

import numpy as np

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyOutcome
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.prefill_parts import PrefillPart, eviction_order
from edgespec.runtime.server.session_record import EngineSession
from edgespec.runtime.wire.inprocess import target_greedy_decode

GREEDY = SamplingParams(max_new_tokens=4)
WAITING = tuple((5 * i + 1) % 64 for i in range(50))
RUNNING = tuple((3 * i + 2) % 64 for i in range(20))


def _session(kv_len: int) -> EngineSession:
    spec = SessionSpec("x", "c", (1,), GREEDY)
    session = EngineSession(spec, None, [1], np.random.default_rng(0), 0.0, 1)  # type: ignore[arg-type]
    session.kv_len, session.prefill_start = kv_len, 0
    return session


def test_the_parts_the_batch_left_out_go_first() -> None:
    sessions = {"waiting": _session(48), "ran": _session(3), "ran-too": _session(9)}
    lru = ["waiting", "ran", "ran-too"]
    assert eviction_order(lru, sessions) == ["ran", "ran-too", "waiting"]  # fewest first
    assert eviction_order(lru, sessions, {"ran", "ran-too"}) == ["waiting", "ran", "ran-too"]


def test_a_waiting_session_far_on_does_not_starve_the_running_one(
    target: TransformersTarget,
) -> None:
    """W has 48 of its 50 tokens cached in parts and waits (its pass does not fit beside
    the batch's); R's parts run batch after batch. R was evicted after each (fewer tokens
    than W) and restarted for ever; now W is, and R's verification ends."""
    engine = VerificationEngine(target, kv_budget_tokens=60, prefill_part_tokens=3)
    engine.open_session(SessionSpec("w", "c", WAITING, GREEDY))
    engine.open_session(SessionSpec("r", "c", RUNNING, GREEDY))
    for _ in range(16):  # W's parts, alone: 48 of its 50 tokens
        assert isinstance(engine.verify_batch([VerifyCall("w", 50, ())])[0], PrefillPart)
    want = target_greedy_decode(target, RUNNING, 1)
    results = [engine.verify_batch([VerifyCall("r", 20, ())])[0] for _ in range(12)]
    done = [r for r in results if isinstance(r, VerifyOutcome)]
    assert done and done[0].committed_token_ids == want  # was: 12 parts, no verdict
    w = engine.verify_batch([VerifyCall("w", 50, ())])[0]  # W starts its parts again
    assert isinstance(w, PrefillPart) and engine.counters().num_reprefills == 1
