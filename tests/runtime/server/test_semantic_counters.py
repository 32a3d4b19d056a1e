"""The Prometheus page counts lossy sessions and the mismatching draft tokens they commit
(docs/RUNTIME.md, "Observability"): ``edgespec_semantic_sessions_total{threshold}`` counts a
semantic session once, at its first committed round; ``edgespec_accepted_mismatches_total
{threshold}`` the mismatching draft tokens committed (``VerifyOutcome.accepted_mismatches``);
all 17 thresholds are always present, 0 included; an exact session counts in neither."""

from __future__ import annotations

import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.messages import DRAFT_HIDDEN, SemanticSpec, SessionSpec, VerifyCall
from edgespec.runtime.server.counters import ServiceCounters
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.semantic import semantic_rules
from edgespec.runtime.testing import tiny_llama
from tests.runtime.semantic_helpers import constant_head, next_token, rows

pytest.importorskip("prometheus_client")

PROMPT = (3, 1, 4, 1, 5)
VOCAB = 64  # tiny_llama's
_Samples = dict[tuple[str, str], float]


def _engine() -> tuple[VerificationEngine, object]:
    """An engine serving ``"semantic"`` with a head that accepts every mismatch."""
    model = tiny_llama(seed=0)
    rules = semantic_rules(constant_head(-20.0))
    return VerificationEngine(TransformersTarget(model), rules=rules), model


def _mismatching(model: object, prefix: tuple[int, ...], n: int) -> tuple[int, ...]:
    """``n`` draft tokens after ``prefix``, each differing from the target's argmax."""
    seq, block = list(prefix), []
    for _ in range(n):
        token = (next_token(model, seq) + 1) % VOCAB
        block.append(token)
        seq.append(token)
    return tuple(block)


def _verify(engine: VerificationEngine, session_id: str, block: tuple[int, ...]) -> int:
    """One round of ``block`` for ``session_id``; the number of tokens it committed."""
    tokens = engine.session_tokens(session_id)
    payloads = {DRAFT_HIDDEN: rows(*[-1.0] * len(block))}
    lossy = engine.session_spec(session_id).verification_rule == "semantic"
    call = VerifyCall(session_id, len(tokens), block, payloads=payloads if lossy else {})
    engine.validate(call, 16)
    (out,) = engine.verify_batch([call])
    assert engine.replay(call) == out  # a retry gets the stored round: counted once
    return len(out.committed_token_ids)  # type: ignore[union-attr]


def _open(engine: VerificationEngine, session_id: str, threshold: int | None) -> None:
    sampling = SamplingParams(max_new_tokens=32)
    if threshold is None:
        engine.open_session(SessionSpec(session_id, "c", PROMPT, sampling))
        return
    spec = SemanticSpec(threshold=threshold, uplink_bps=20e6)
    engine.open_session(SessionSpec(session_id, "c", PROMPT, sampling,
                                    verification_rule="semantic", semantic=spec))  # fmt: skip


def _page(engine: VerificationEngine) -> _Samples:
    """The two counters' samples on the Prometheus page: (metric, threshold) -> value."""
    from edgespec.runtime.server.prometheus import _Collector

    metrics = ServiceCounters().metrics(engine.counters(), 0)
    return {
        (s.name, s.labels["threshold"]): s.value
        for family in _Collector(lambda: metrics).collect()
        for s in family.samples
        if "threshold" in s.labels
    }


def _zeros() -> _Samples:
    names = ("edgespec_semantic_sessions_total", "edgespec_accepted_mismatches_total")
    return {(name, str(t)): 0.0 for name in names for t in range(17)}


def test_a_lossy_session_counts_once_with_every_committed_mismatch() -> None:
    """Two rounds of 3 mismatches each, all accepted (and the bonus): 1 session at
    threshold 12, 6 accepted mismatches; the other 16 thresholds stay 0."""
    engine, model = _engine()
    _open(engine, "lossy", 12)
    assert _verify(engine, "lossy", _mismatching(model, PROMPT, 3)) == 4
    tokens = engine.session_tokens("lossy")
    assert _verify(engine, "lossy", _mismatching(model, tokens, 3)) == 4
    assert _page(engine) == _zeros() | {
        ("edgespec_semantic_sessions_total", "12"): 1.0,
        ("edgespec_accepted_mismatches_total", "12"): 6.0,
    }


def test_an_exact_session_counts_nothing() -> None:
    """The same mismatching block in an exact session: the first mismatch is rejected;
    every series is 0."""
    engine, model = _engine()
    _open(engine, "exact", None)
    assert _verify(engine, "exact", _mismatching(model, PROMPT, 3)) == 1
    assert _page(engine) == _zeros()


def test_a_session_per_threshold() -> None:
    """Sessions at thresholds 16 and 0: each counted under its own; at 0 every mismatch
    is rejected (standard greedy), so it commits none."""
    engine, model = _engine()
    _open(engine, "all", 16)
    _open(engine, "none", 0)
    assert _verify(engine, "all", _mismatching(model, PROMPT, 2)) == 3
    assert _verify(engine, "none", _mismatching(model, PROMPT, 2)) == 1
    assert _page(engine) == _zeros() | {
        ("edgespec_semantic_sessions_total", "16"): 1.0,
        ("edgespec_semantic_sessions_total", "0"): 1.0,
        ("edgespec_accepted_mismatches_total", "16"): 2.0,
    }
