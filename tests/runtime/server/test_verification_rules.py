"""Verification rules chosen by name per session, with payloads, in-process and over gRPC."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from edgespec.core.types import SamplingParams, VerifyResult
from edgespec.runtime.backends.logit_rows import LogitRows
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyOutcome
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.verification import EXACT_RULES, Verdict, refuse_payloads
from edgespec.runtime.wire.codec import call_from_proto, call_to_proto, pb
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from tests.runtime.conftest import start_server

PROMPT = (3, 1, 4, 1, 5)
GREEDY = SamplingParams(max_new_tokens=8)


@dataclass(frozen=True, slots=True)
class AcceptWhereChannelIsGood:
    """A lossy test rule: accepts draft token i when payload ``snr_db[i]`` ≥ 10, else
    stops there; the extra token is the target's argmax at the stop."""

    @property
    def lossless(self) -> bool:
        return False

    def check(self, call: VerifyCall, sampling: SamplingParams, vocab_size: int) -> None:
        refuse_payloads(call, "snr", accepted=("snr_db",))
        snr = call.payloads.get("snr_db")
        if snr is None or snr.shape != (len(call.draft_token_ids),):
            raise RequestError(ErrorCode.INVALID_ARGUMENT, "snr rule needs snr_db of shape (K,)")

    def verdict(
        self,
        call: VerifyCall,
        sampling: SamplingParams,
        logits: LogitRows,
        rng: np.random.Generator,
    ) -> Verdict:
        snr = call.payloads["snr_db"]
        n = next((i for i, v in enumerate(snr) if v < 10), len(snr))
        accepted = call.draft_token_ids[:n]
        rejection = n if n < len(snr) else None
        return Verdict(VerifyResult(len(snr), n, rejection, logits.argmax()[n], accepted))


RULES = {**EXACT_RULES, "snr": AcceptWhereChannelIsGood()}


def _open(engine: VerificationEngine, sid: str, rule: str) -> None:
    engine.open_session(SessionSpec(sid, "c", PROMPT, GREEDY, verification_rule=rule))


def test_a_session_gets_the_rule_it_names(target: TransformersTarget) -> None:
    engine = VerificationEngine(target, rules=RULES)
    _open(engine, "lossy", "snr")
    _open(engine, "exact", "exact")
    snr = np.array([20.0, 15.0, 3.0], dtype=np.float32)
    lossy = VerifyCall("lossy", len(PROMPT), (60, 61, 62), payloads={"snr_db": snr})
    exact = VerifyCall("exact", len(PROMPT), (60, 61, 62))
    for call in (lossy, exact):
        engine.validate(call, 8)
    out_lossy, out_exact = engine.verify_batch([lossy, exact])
    assert isinstance(out_lossy, VerifyOutcome) and isinstance(out_exact, VerifyOutcome)
    assert out_lossy.result.accepted_token_ids == (60, 61)  # whatever the target says
    assert out_exact.result.num_accepted < 2  # the exact rule does not take 60, 61 blindly


def test_unknown_rules_and_unwanted_payloads_are_refused(target: TransformersTarget) -> None:
    engine = VerificationEngine(target)
    with pytest.raises(RequestError) as info:
        _open(engine, "s", "wisv")
    assert (info.value.code, info.value.message) == (
        ErrorCode.INVALID_ARGUMENT,
        "unknown verification rule 'wisv'; this server serves ['exact']",
    )
    _open(engine, "s", "exact")
    call = VerifyCall("s", len(PROMPT), (1,), payloads={"csi": np.zeros(1, np.float32)})
    with pytest.raises(RequestError) as info:
        engine.validate(call, 8)
    assert info.value.message == "verification rule 'exact' takes no payload(s) ['csi']"
    many = {f"p{i:05d}": np.zeros(1, np.float32) for i in range(20_000)}
    with pytest.raises(RequestError) as info:  # the names are not all echoed back
        engine.validate(VerifyCall("s", len(PROMPT), (1,), payloads=many), 8)
    assert info.value.message == (
        "verification rule 'exact' takes no payload(s) ['p00000', 'p00001', 'p00002', "
        "'p00003', 'p00004', 'p00005', 'p00006', 'p00007'] and 19992 more"
    )


def test_payloads_cross_the_wire_and_bad_shapes_are_refused(target: TransformersTarget) -> None:
    snr = np.array([[1.5, 2.0], [3.0, -4.0]], dtype=np.float32)
    call = VerifyCall("s", 3, (1, 2), payloads={"snr_db": snr})
    back = call_from_proto(call_to_proto(call), 16, 32)
    assert list(back.payloads) == ["snr_db"] and np.array_equal(back.payloads["snr_db"], snr)
    bad = pb.VerifyRequest(session_id="s", prefix_len=3, draft_token_ids=[1])
    bad.payloads.add(name="snr_db", shape=[3], values=[1.0, 2.0])
    with pytest.raises(RequestError, match=r"payload 'snr_db' has 2 values for shape \[3\]"):
        call_from_proto(bad, 16, 32)
    server = start_server(target, rules=RULES)
    try:
        verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
        verifier.open(SessionSpec("r", "c", PROMPT, GREEDY, verification_rule="snr"))
        good = np.array([12.0, 1.0], dtype=np.float32)
        reply = verifier.verify(VerifyCall("r", len(PROMPT), (7, 8), payloads={"snr_db": good}))
        assert reply.outcome.result.accepted_token_ids == (7,)
    finally:
        server.stop(grace_s=0)


def test_the_default_rules_are_the_lossless_exact_rule_only() -> None:
    assert list(EXACT_RULES) == ["exact"]
    assert EXACT_RULES["exact"].lossless is True
    assert AcceptWhereChannelIsGood().lossless is False
