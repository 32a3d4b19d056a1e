"""A semantic run whose window policy hands rounds to the server (fused rounds, which the
server judges semantically too): its report holds one entry per round, fused ones
included. Only the device's own rounds were counted, so ``--records`` labelled a row with
another round's exchanges and mismatches, then ended in an IndexError with its file half
written, and the LOSSY line left out the fused rounds' accepted mismatches."""

from __future__ import annotations

from edgespec.core.types import SamplingParams
from edgespec.policies.interfaces import WindowDecision, WindowObservation
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.edge.drafter import DraftOptions, generate
from edgespec.runtime.edge.semantic import SemanticRequest
from edgespec.runtime.server.semantic import semantic_rules
from edgespec.runtime.testing import noisy_copy, tiny_llama
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from tests.runtime.conftest import start_server
from tests.runtime.semantic_helpers import constant_head


class Alternate:
    """A device round, then a fused run of one round, and so on."""

    def __init__(self) -> None:
        self.n = 0

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        self.n += 1
        return WindowDecision(4, fused=self.n % 2 == 0)


def test_fused_rounds_have_their_entries_in_a_semantic_report() -> None:
    target_model = tiny_llama(seed=0)
    draft_model = noisy_copy(target_model, noise=0.2, seed=1)
    server = start_server(TransformersTarget(target_model),
                          lambda: TransformersDraft(draft_model),
                          rules=semantic_rules(constant_head(-20.0)))  # fmt: skip
    try:
        result = generate(
            RemoteVerifier(f"127.0.0.1:{server.port}"), TransformersDraft(draft_model),
            (3, 1, 4, 1, 5), SamplingParams(max_new_tokens=24), DraftOptions("s"), Alternate(),
            semantic=SemanticRequest(12, 20e6, upload="sh"),
        )  # fmt: skip
    finally:
        server.stop(grace_s=0)
    report, rounds = result.semantic, result.rounds
    assert report is not None and any(r.fused for r in rounds)
    assert len(report.exchanges) == len(report.accepted_mismatches) == len(rounds)
    for index, record in enumerate(rounds):
        labels = report.round_labels(index)  # each row's own (the last raised IndexError)
        assert (labels["exchanges"] == 1) if record.fused else (labels["exchanges"] >= 1)
    mismatching = sum(report.accepted_mismatches)
    assert f"{mismatching} mismatching draft tokens accepted in {len(rounds)} rounds" in (
        report.line(rounds)
    )
