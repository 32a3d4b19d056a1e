"""The two halves of the calibration check (:mod:`edgespec.calibration.command`):
a real loopback run of drafter processes against one gRPC server, and the simulator
replaying that run's requests (lengths, devices, per-position acceptance)."""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

from edgespec.core.types import RequestRecord, RoundRecord
from edgespec.output_paths import write_atomically


def acceptance_seq(rounds: Sequence[RoundRecord]) -> list[int]:
    """Per-position acceptance from greedy rounds (docs/SIMULATOR.md): a round that
    accepted L of γ contributes L ones and then 0 (the rejected position, whose correction
    is the next committed token) or, when all γ were accepted, 1 for the bonus token's
    position, which replay at the same γ never reads."""
    seq: list[int] = []
    for r in rounds:
        seq += [1] * r.num_accepted + [0 if r.num_accepted < r.num_drafted else 1]
    return seq


class DrafterProcessError(RuntimeError):
    """A drafter process of the real run failed: each one's error (type and message),
    ``drafter process I: ...``, joined by ``; ``."""


@dataclass(frozen=True, slots=True)
class RealRun:
    records: tuple[RequestRecord, ...]
    rounds: tuple[tuple[RoundRecord, ...], ...]
    clients: tuple[int, ...]
    outputs: tuple[tuple[int, ...], ...]
    load_average: tuple[float, float, float]


def run_real(
    backend: Any,
    make_draft: Callable[[], Any],
    prompts: Sequence[Sequence[tuple[int, ...]]],
    max_new_tokens: int,
    gamma: int,
    max_batch_size: int,
    tag: str = "cal",
    timeout_s: float = 3600.0,
) -> RealRun:
    """Client i runs ``prompts[i]`` in order, in its own drafter process (1 torch thread);
    all clients start together on one gRPC server in this process.

    Processes, not threads, as separate edge devices would be: drafter threads would
    share this interpreter's lock with the server. ``make_draft`` is pickled into each
    process (e.g. ``functools.partial(TransformersDraft, model)``, or ``NgramDrafter``).
    """
    from edgespec.config import from_dict
    from edgespec.policies.batching import FcfsBatching
    from edgespec.runtime.child_processes import child_context
    from edgespec.runtime.server.config import ServerConfig
    from edgespec.runtime.server.engine import VerificationEngine
    from edgespec.runtime.server.service import VerificationService
    from edgespec.runtime.wire.server_thread import ServerThread

    config = from_dict(ServerConfig, {"port": 0, "max_batch_size": max_batch_size})
    ctx = child_context(__name__)
    barrier = ctx.Barrier(len(prompts))
    queue = ctx.Queue()
    server = ServerThread(
        lambda: VerificationService(VerificationEngine(backend), config, FcfsBatching())
    )
    with server:
        address = f"127.0.0.1:{server.port}"
        procs = [
            ctx.Process(
                target=_client_process,
                args=(i, make_draft, list(ps), address, max_new_tokens, gamma, tag, barrier, queue),
                daemon=True,
            )
            for i, ps in enumerate(prompts)
        ]
        results, errors = _run_processes(procs, queue, barrier, timeout_s)
    if errors:
        raise DrafterProcessError("; ".join(errors))
    flat = [(i, r) for i in range(len(prompts)) for r in results[i]]
    start = min(r.request.arrival_s for _, r in flat)
    return RealRun(  # arrivals at the common start, as in the simulated trace
        records=tuple(replace(r.request, arrival_s=start) for _, r in flat),
        rounds=tuple(r.rounds for _, r in flat),
        clients=tuple(i for i, _ in flat),
        outputs=tuple(r.output_token_ids for _, r in flat),
        load_average=os.getloadavg(),
    )


def _run_processes(
    procs: list[Any], queue: Any, barrier: Any, timeout_s: float
) -> tuple[dict[int, list[Any]], list[str]]:
    """Start the drafter processes, collect each one's results from ``queue`` (the first
    error releases the others from ``barrier``), and join them (killing any left after
    10 s); returns (results by client, errors)."""
    results: dict[int, list[Any]] = {}
    errors: list[str] = []
    for proc in procs:
        proc.start()
    try:
        for _ in procs:
            i, done, error = queue.get(timeout=timeout_s)
            results[i] = done
            if error is not None:
                errors.append(f"drafter process {i}: {error}")
                barrier.abort()  # release any process still waiting to start
    finally:
        for proc in procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
    return results, errors


def _client_process(
    index: int,
    make_draft: Callable[[], Any],
    prompts: list[tuple[int, ...]],
    address: str,
    max_new_tokens: int,
    gamma: int,
    tag: str,
    barrier: Any,
    queue: Any,
) -> None:
    """One drafter process: build the draft, wait for the others, run the prompts in order,
    put (index, results, error text or None) on ``queue``. Timestamps come from
    ``time.perf_counter`` (CLOCK_MONOTONIC on Linux: one clock for all processes)."""
    done: list[Any] = []
    try:
        import torch

        from edgespec.core.types import SamplingParams
        from edgespec.policies.window import StaticWindow
        from edgespec.runtime.edge.drafter import DraftOptions, generate
        from edgespec.runtime.wire.grpc_client import RemoteVerifier

        torch.set_num_threads(1)
        sampling = SamplingParams(max_new_tokens=max_new_tokens)
        verifier, drafter = RemoteVerifier(address), make_draft()
        barrier.wait()
        for j, prompt in enumerate(prompts):
            drafter.reset()
            opts = DraftOptions(f"{tag}-{index}-{j}", client_id=str(index))
            done.append(generate(verifier, drafter, prompt, sampling, opts, StaticWindow(gamma)))
    except BaseException as exc:  # reported by the parent
        queue.put((index, done, f"{type(exc).__name__}: {exc}"))
        return
    queue.put((index, done, None))


def link_rtt_ms(run: RealRun) -> float:
    """Median per-round network time (uplink + downlink) of a run, in ms."""
    return 1e3 * statistics.median(r.uplink_s + r.downlink_s for rs in run.rounds for r in rs)


def write_trace(run: RealRun, path: Path) -> Path:
    """The real requests as a simulator trace (all arriving at 0 on their client's device,
    which serves them in order, as the client process did), written whole or not at all."""

    def write(f: BinaryIO) -> None:
        for i, (rec, rounds, client) in enumerate(
            zip(run.records, run.rounds, run.clients, strict=True)
        ):
            row = {
                "request_id": f"r{i}", "arrival_ms": 0.0, "prompt_tokens": rec.num_prompt_tokens,
                "output_tokens": rec.num_output_tokens, "drafter_id": client,
                "acceptance_seq": acceptance_seq(rounds),
            }  # fmt: skip
            f.write((json.dumps(row) + "\n").encode("utf-8"))

    write_atomically(path, write)
    return path


def simulate_run(
    trace: Path,
    target_profile: Path,
    draft_profile: Path,
    rtt_ms: float,
    num_clients: int,
    gamma: int,
    max_batch_size: int,
    seed: int = 0,
) -> tuple[RequestRecord, ...]:
    from edgespec.sim.setup.scenario import scenario_from_dict
    from edgespec.sim.simulator import simulate

    scenario = scenario_from_dict(
        {
            "name": "calibration", "seed": seed, "duration_s": 36000.0,
            "links": {"loopback": {"rtt_ms": rtt_ms, "bandwidth_mbps": 10000.0}},
            "auto_topology": {
                "devices": [{
                    "name": "client", "count": num_clients, "draft_model": "llama-68m",
                    "hardware": "generic-cpu", "link": "loopback",
                    "cost_model": {"kind": "wisp", "profile": str(draft_profile)},
                }],
                "servers": [{
                    "name": "server", "count": 1, "target_model": "gemma3-270m",
                    "hardware": "generic-cpu", "kv_budget_tokens": 1 << 30,
                    "max_batch_size": max_batch_size, "max_batch_tokens": 1 << 30,
                    "cost_model": {"kind": "wisp", "profile": str(target_profile)},
                }],
            },
            "policies": {"batching": {"name": "fcfs"},
                         "window": {"name": "static", "params": {"gamma": gamma}}},
            "acceptance": {"kind": "trace", "traces": [str(trace)]},
            "workload": {"kind": "trace", "trace": str(trace)},
        },
        [],
    )  # fmt: skip
    result = simulate(scenario, progress=False)
    return tuple(result.requests)
