"""Every finished output against centralized decoding: the server decodes each prompt the
load used on its own (the ``Generate`` RPC, K = 0 per step: the target's greedy output, its
rows biased and penalized as the load's requests are), and a finished request whose output
differs is a mismatch. Sampled loads are not checked: two draws need not agree."""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from edgespec.core.sequences import first_difference
from edgespec.core.types import SamplingParams
from edgespec.runtime.loadgen.messages import Finished
from edgespec.runtime.loadgen.spec import ServerAccess

QUOTA_WAIT_S = 60.0
"""How long a reference decoding the server refuses for its session quota is asked again:
sessions the load's clients are closing go within it; those a killed client left open on a
server of its own (``--server``) stay until that server's idle timeout."""


@dataclass(frozen=True, slots=True)
class Mismatch:
    """A finished request whose output is not the centralized one: where they part."""

    request_id: str
    prompt_index: int
    first_difference: int
    num_output_tokens: int
    num_reference_tokens: int


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The outputs checked against the references; ``failure``: why there are none (the
    server refused or failed the centralized decoding: the load's report is kept)."""

    num_checked: int
    num_references: int
    mismatches: tuple[Mismatch, ...]
    failure: str | None = None


def centralized_outputs(
    server: ServerAccess,
    prompts: Sequence[tuple[int, ...]],
    indices: Sequence[int],
    sampling: SamplingParams,
    slo_class: str,
    run_tag: str,
    num_threads: int = 8,
    quota_wait_s: float = QUOTA_WAIT_S,
) -> dict[int, tuple[int, ...]]:
    """The server's centralized greedy output (``sampling``'s, greedy) of each prompt in
    ``indices`` (sessions of
    ``slo_class``, one the server knows; ``TAG.reference-I``, the run's tag first), at most
    ``num_threads`` at once, and no more than the server's ``max_sessions_per_client`` (its
    Health says it; the references are one client's sessions). Each chunk has 120 s to come
    (:meth:`~edgespec.runtime.wire.grpc_client.RemoteVerifier.generate`). A decoding the
    server refuses ``RESOURCE_EXHAUSTED`` (its quota taken by sessions the load left open:
    under auth the load's sessions and the references are one client, the token) is asked
    again every second for ``quota_wait_s``, as those sessions close or expire."""
    from edgespec.runtime.edge.reconnect import retry_unavailable
    from edgespec.runtime.errors import ErrorCode
    from edgespec.runtime.messages import SessionSpec

    if not sampling.greedy:
        raise ValueError("a sampled load has no centralized output to check against")
    num_threads = min(num_threads, len(indices), _session_quota(server) or num_threads)
    verifier = server.client(timeout_s=120.0)

    def decode(index: int) -> tuple[int, ...]:
        spec = SessionSpec(
            f"{run_tag}.reference-{index}", "bench-reference", prompts[index], sampling, slo_class
        )
        return retry_unavailable(
            lambda: tuple(t for chunk in verifier.generate(spec) for t in chunk),
            time.monotonic, quota_wait_s, 1.0, retry_code=ErrorCode.RESOURCE_EXHAUSTED,
        )  # fmt: skip

    try:
        with ThreadPoolExecutor(max(1, num_threads)) as pool:
            return dict(zip(indices, pool.map(decode, indices), strict=True))
    finally:
        verifier.close_channel()


def _session_quota(server: ServerAccess) -> int | None:
    """The server's ``max_sessions_per_client`` as its Health says it (``None``: it does not
    say, or did not answer within 10 s: the decoding then says what is wrong)."""
    from edgespec.runtime.errors import RequestError

    try:
        with server.connected(timeout_s=10.0) as client:
            return client.describe().max_sessions_per_client  # type: ignore[no-any-return]
    except RequestError:
        return None


def check_outputs(
    finished: Sequence[Finished], references: dict[int, tuple[int, ...]]
) -> CheckResult:
    """Compare every finished output with its prompt's reference."""
    mismatches = []
    for f in finished:
        want = references[f.prompt_index]
        if f.output != want:
            mismatches.append(
                Mismatch(
                    f.request_id,
                    f.prompt_index,
                    first_difference(f.output, want),
                    len(f.output),
                    len(want),
                )
            )
    return CheckResult(len(finished), len(references), tuple(mismatches))
