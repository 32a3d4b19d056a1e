"""Loopback gRPC: lossless serving with many clients, batching, baselines, stats."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from edgespec.core.types import SamplingParams
from edgespec.policies.window import StaticWindow
from edgespec.runtime.backends.base import DraftBackend
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.edge.drafter import DraftOptions, GenerationResult, generate
from edgespec.runtime.messages import SessionSpec
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.conftest import ServerFactory

PROMPTS = [tuple((7 * i + j) % 64 for j in range(3 + 4 * i)) for i in range(8)]
MAX_NEW = 24


def _run_clients(
    port: int,
    draft_model: Any,
    prompts: list[tuple[int, ...]],
    make_drafter: Callable[[int], DraftBackend] | None = None,
    max_new_tokens: int = MAX_NEW,
    gammas: Sequence[int] | None = None,
) -> list[Any]:
    """Run one client thread per prompt at once; client i drafts with ``make_drafter(i)``
    (default: the model for odd i, prompt lookup for even), ``gammas[i]`` tokens a round
    (default 4). Exceptions are returned."""
    results: list[GenerationResult | BaseException | None] = [None] * len(prompts)
    barrier = threading.Barrier(len(prompts))

    def client(i: int) -> None:
        try:
            verifier = RemoteVerifier(f"127.0.0.1:{port}")
            if make_drafter is not None:
                drafter = make_drafter(i)
            else:
                drafter = TransformersDraft(draft_model) if i % 2 else NgramDrafter()
            barrier.wait()
            results[i] = generate(
                verifier,
                drafter,
                prompts[i],
                SamplingParams(max_new_tokens=max_new_tokens),
                DraftOptions(session_id=f"s{i}", client_id=f"edge-{i}"),
                StaticWindow(gammas[i] if gammas is not None else 4),
            )
        except BaseException as exc:  # surfaced by the assertion below
            results[i] = exc

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(prompts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return results


def test_many_concurrent_clients_lossless_and_batched(
    make_server: ServerFactory, target: TransformersTarget, draft_model: Any
) -> None:
    server = make_server()
    references = [target_greedy_decode(target, p, MAX_NEW) for p in PROMPTS]
    results = _run_clients(server.port, draft_model, PROMPTS)
    for result, reference in zip(results, references, strict=True):
        assert isinstance(result, GenerationResult), result
        assert result.output_token_ids == reference
    stats = RemoteVerifier(f"127.0.0.1:{server.port}").stats()
    assert stats.max_batch_size > 1  # multi-request batches formed
    assert stats.num_batches < sum(r.request.num_rounds for r in results)
    assert sum(n for size, n in stats.batch_size_histogram) == stats.num_batches
    assert stats.num_sessions == 0 and stats.num_cached_tokens == 0  # all closed and freed
    assert stats.num_cache_hits > 0 and 0 < stats.cache_hit_ratio < 1
    for res in results:
        assert isinstance(res, GenerationResult)
        # every round but the last (cut at the token budget) commits L + 1 tokens
        assert all(r.num_committed == r.num_accepted + 1 for r in res.rounds[:-1])
        assert sum(r.num_committed for r in res.rounds) == MAX_NEW
    assert any(r.batch_size > 1 for res in results for r in res.rounds)


def test_length_aware_batching_serves_losslessly(
    make_server: ServerFactory, target: TransformersTarget, draft_model: Any
) -> None:
    server = make_server(batching={"name": "lab", "params": {"max_length_ratio": 4.0}})
    results = _run_clients(server.port, draft_model, PROMPTS[:4])
    for result, prompt in zip(results, PROMPTS[:4], strict=True):
        assert result.output_token_ids == target_greedy_decode(target, prompt, MAX_NEW)


def test_centralized_and_fused_baselines_match_target(
    make_server: ServerFactory, target: TransformersTarget
) -> None:
    server = make_server()
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    for i, prompt in enumerate(PROMPTS[:3]):
        reference = target_greedy_decode(target, prompt, MAX_NEW)
        spec = SessionSpec(f"c{i}", "x", prompt, SamplingParams(max_new_tokens=MAX_NEW))
        central = [t for chunk in verifier.generate(spec) for t in chunk]
        assert tuple(central) == reference
        spec = SessionSpec(f"f{i}", "x", prompt, SamplingParams(max_new_tokens=MAX_NEW))
        chunks = list(verifier.generate(spec, fused=True, gamma=4))
        assert tuple(t for c in chunks for t in c) == reference
        assert len(chunks) < MAX_NEW  # several tokens per round: it really speculated
    stats = verifier.stats()
    assert stats.num_sessions == 0


def test_drafter_records_round_timings(make_server: ServerFactory, draft_model: Any) -> None:
    server = make_server()
    streamed: list[int] = []
    result = generate(
        RemoteVerifier(f"127.0.0.1:{server.port}"),
        TransformersDraft(draft_model),
        PROMPTS[2],
        SamplingParams(max_new_tokens=MAX_NEW),
        DraftOptions(session_id="timed"),
        on_tokens=streamed.extend,
    )
    assert tuple(streamed) == result.output_token_ids
    req = result.request
    assert req.num_output_tokens == MAX_NEW and req.num_rounds == len(result.rounds)
    for r in result.rounds:
        assert r.draft_s > 0 and r.verify_s > 0 and r.queue_s >= 0 and r.uplink_s >= 0
        parts = r.draft_s + r.uplink_s + r.queue_s + r.verify_s + r.downlink_s
        assert abs(parts - (r.end_s - r.start_s)) < 1e-6


def test_prometheus_endpoint(make_server: ServerFactory) -> None:
    import socket
    import urllib.request

    import pytest

    pytest.importorskip("prometheus_client")
    from edgespec.runtime.server.prometheus import start_prometheus

    server = make_server()
    result = generate(
        RemoteVerifier(f"127.0.0.1:{server.port}"),
        NgramDrafter(),
        PROMPTS[1],
        SamplingParams(max_new_tokens=8),
        DraftOptions(session_id="prom"),
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert server.service is not None
    http = start_prometheus(port, server.service.metrics)
    try:
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    finally:
        http.shutdown()
        http.server_close()
    stats = server.service.stats()
    r = result.request
    assert f"edgespec_forwarded_tokens_total {float(stats.num_tokens_forwarded)}" in body
    assert f"edgespec_batches_total {float(stats.num_batches)}" in body
    # the client's own counts, as the server's endpoint reports them
    assert f"edgespec_verifications_total {float(r.num_rounds)}" in body
    assert f"edgespec_committed_tokens_total {float(r.num_output_tokens)}" in body
    assert f"edgespec_accepted_tokens_total {float(r.num_accepted)}" in body
    assert f"edgespec_drafted_tokens_total {float(r.num_drafted)}" in body
    assert "edgespec_opened_sessions_total 1.0" in body
    assert "edgespec_closed_sessions_total 1.0" in body
    assert f"edgespec_queue_wait_seconds_count {float(r.num_rounds)}" in body
    assert f'edgespec_batch_size_bucket{{le="1"}} {float(stats.num_batches)}' in body


@pytest.mark.parametrize("cuts", [{}, {"top_k": 3, "min_p": 0.25}])
def test_stochastic_over_grpc_matches_in_process(
    make_server: ServerFactory, target: TransformersTarget, draft_model: Any, cuts: dict[str, Any]
) -> None:
    """Same seeds → same sampled output remotely and in-process (q and the cuts cross the
    wire)."""
    from edgespec.runtime.wire.inprocess import speculative_generate

    server = make_server()
    for seed in range(3):
        sampling = SamplingParams(temperature=0.7, top_p=0.9, max_new_tokens=16, seed=seed,
                                  **cuts)  # fmt: skip
        remote = generate(
            RemoteVerifier(f"127.0.0.1:{server.port}"),
            TransformersDraft(draft_model),
            PROMPTS[3],
            sampling,
            DraftOptions(session_id=f"sto{seed}"),
        )
        local = speculative_generate(
            target, TransformersDraft(draft_model), PROMPTS[3], 4, sampling
        )
        assert remote.output_token_ids == local.output_token_ids
        assert [r.num_accepted for r in remote.rounds] == [r.num_accepted for r in local.rounds]


def test_dynamic_window_policy_drives_gamma(make_server: ServerFactory, target: Any) -> None:
    from edgespec.policies.window import DynamicWindow

    server = make_server()
    window = DynamicWindow(initial_gamma=2, min_gamma=1, max_gamma=6)
    result = generate(
        RemoteVerifier(f"127.0.0.1:{server.port}"),
        NgramDrafter(),
        PROMPTS[4],
        SamplingParams(max_new_tokens=MAX_NEW),
        DraftOptions(session_id="dyn"),
        window,
    )
    assert result.output_token_ids == target_greedy_decode(target, PROMPTS[4], MAX_NEW)
    gammas = [r.num_drafted for r in result.rounds[:-1]]
    assert gammas[0] == 2 and len(set(gammas)) > 1


def test_eviction_under_a_small_kv_budget_is_transparent(
    make_server: ServerFactory, target: TransformersTarget, draft_model: Any
) -> None:
    server = make_server(kv_budget_tokens=40)
    results = _run_clients(server.port, draft_model, PROMPTS[:4])
    for result, prompt in zip(results, PROMPTS[:4], strict=True):
        assert result.output_token_ids == target_greedy_decode(target, prompt, MAX_NEW)
    stats = RemoteVerifier(f"127.0.0.1:{server.port}").stats()
    assert stats.num_evictions > 0 and stats.num_reprefills > 0


@pytest.mark.parametrize("fused", [False, True], ids=["centralized", "fused"])
def test_server_side_runs_sample_from_the_cut_rows(
    make_server: ServerFactory, target: TransformersTarget, fused: bool
) -> None:
    """Generate's decoding and a fused run sample through the one verification: top_k 1 at
    temperature 1 is the target's greedy decoding; without the cut the same seed samples."""
    server = make_server()
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")

    def run(session_id: str, **cuts: Any) -> tuple[int, ...]:
        sampling = SamplingParams(temperature=1.0, max_new_tokens=12, seed=3, **cuts)
        spec = SessionSpec(session_id, "c", PROMPTS[2], sampling)
        return tuple(t for chunk in verifier.generate(spec, fused=fused, gamma=3) for t in chunk)

    greedy = target_greedy_decode(target, PROMPTS[2], 12)
    assert run("cut", top_k=1) == greedy
    assert run("uncut") != greedy
