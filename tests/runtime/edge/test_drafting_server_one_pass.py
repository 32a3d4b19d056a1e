"""The drafting server's batch is verified in ONE server pass (Zhu et al.'s Eq. 18 prices
one verification per batch; the simulator does): its verify calls carry the batch's
``batch_id`` and ``batch_calls``, and the loopback server (whose batching starts a pass with
whatever has arrived) holds them until the batch is there. The outputs stay target-only
greedy decoding."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.batched_draft import BatchedDraftModel
from edgespec.runtime.edge.drafting_server import run_drafting_server
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.conftest import start_server

PROMPTS = [(3, 4, 5), (9, 8, 7, 6, 5, 4), (11,), (20, 21), (30, 31, 32), (40,), (7, 7), (2,)]


@pytest.fixture
def grouping_server(target: TransformersTarget) -> Iterator[ServerThread]:
    """A server of its own (its pass count is this test's); a group waits up to 30 s for
    its calls, so a loaded machine cannot split a batch: every one completes its group. A
    pass takes at most one batch's 4 calls: pipelined, a loaded machine may otherwise find
    two released groups queued at once and verify both in one pass of 8 (a fine pass, but
    not the one-to-one this test counts)."""
    running = start_server(target, group_wait_s=30.0, max_batch_size=4)
    yield running
    running.stop(grace_s=0)


@pytest.mark.parametrize("pipelined", [False, True])
def test_each_batch_sent_is_one_server_pass(
    grouping_server: ServerThread,
    batched: BatchedDraftModel,
    target: TransformersTarget,
    pipelined: bool,
) -> None:
    verifier = RemoteVerifier(f"127.0.0.1:{grouping_server.port}")
    try:
        result = run_drafting_server(
            verifier, batched, PROMPTS, batch_size=4, gamma=3, max_new_tokens=10,
            pipelined=pipelined,
        )  # fmt: skip
        stats = verifier.stats()
    finally:
        verifier.close_channel()
    num_sent = sum(len(step) for step in result.schedule)  # the batches each step sent
    assert stats.num_batches == num_sent
    assert stats.num_batches < sum(s.num_rounds for s in result.sessions)  # not one per call
    assert stats.max_batch_size == 4
    reference = tuple(target_greedy_decode(target, p, 10) for p in PROMPTS)
    assert result.output_token_ids == reference
