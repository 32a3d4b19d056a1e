"""The two halves of the calibration check (:mod:`edgespec.experiments.calibration`):
a real loopback run of drafter threads against one gRPC server, and the simulator
replaying that run's requests (lengths, devices, per-position acceptance)."""

from __future__ import annotations

import json
import os
import statistics
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from edgespec.core.types import RequestRecord, RoundRecord


def acceptance_seq(rounds: Sequence[RoundRecord]) -> list[int]:
    """Per-position acceptance from greedy rounds (docs/SIMULATOR.md): a round that
    accepted L of γ contributes L ones and then 0 (the rejected position, whose correction
    is the next committed token) or, when all γ were accepted, 1 for the bonus token's
    position, which replay at the same γ never reads."""
    seq: list[int] = []
    for r in rounds:
        seq += [1] * r.num_accepted + [0 if r.num_accepted < r.num_drafted else 1]
    return seq


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
) -> RealRun:
    """Client i runs ``prompts[i]`` in order; all clients start together on one server."""
    from edgespec.config import ServerConfig, from_dict
    from edgespec.core.types import SamplingParams
    from edgespec.policies.batching import FcfsBatching
    from edgespec.policies.window import StaticWindow
    from edgespec.runtime.drafter import DraftOptions, generate
    from edgespec.runtime.engine import Engine
    from edgespec.runtime.server import VerificationService
    from edgespec.runtime.transport import RemoteVerifier, ServerThread

    config = from_dict(ServerConfig, {"port": 0, "max_batch_size": max_batch_size})
    sampling = SamplingParams(max_new_tokens=max_new_tokens)
    results: list[list[Any]] = [[] for _ in prompts]
    barrier = threading.Barrier(len(prompts))
    errors: list[BaseException] = []

    def client(i: int, address: str) -> None:
        verifier, drafter = RemoteVerifier(address), make_draft()
        barrier.wait()
        try:
            for j, prompt in enumerate(prompts[i]):
                drafter.reset()
                opts = DraftOptions(f"{tag}-{i}-{j}", client_id=str(i))
                results[i].append(
                    generate(verifier, drafter, prompt, sampling, opts, StaticWindow(gamma))
                )
        except BaseException as exc:  # reported after join
            errors.append(exc)

    server = ServerThread(lambda: VerificationService(Engine(backend), config, FcfsBatching()))
    with server:
        address = f"127.0.0.1:{server.port}"
        threads = [threading.Thread(target=client, args=(i, address)) for i in range(len(prompts))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if errors:
        raise errors[0]
    flat = [(i, r) for i, rs in enumerate(results) for r in rs]
    start = min(r.request.arrival_s for _, r in flat)
    return RealRun(  # arrivals at the common start, as in the simulated trace
        records=tuple(replace(r.request, arrival_s=start) for _, r in flat),
        rounds=tuple(r.rounds for _, r in flat),
        clients=tuple(i for i, _ in flat),
        outputs=tuple(r.output_token_ids for _, r in flat),
        load_average=os.getloadavg(),
    )


def link_rtt_ms(run: RealRun) -> float:
    """Median per-round network time (uplink + downlink) of a run, in ms."""
    return 1e3 * statistics.median(r.uplink_s + r.downlink_s for rs in run.rounds for r in rs)


def write_trace(run: RealRun, path: Path) -> Path:
    """The real requests as a simulator trace (all arriving at 0 on their client's device,
    which serves them in order, as the client thread did)."""
    with path.open("w") as f:
        for i, (rec, rounds, client) in enumerate(
            zip(run.records, run.rounds, run.clients, strict=True)
        ):
            row = {
                "request_id": f"r{i}", "arrival_ms": 0.0, "prompt_tokens": rec.num_prompt_tokens,
                "output_tokens": rec.num_output_tokens, "drafter_id": client,
                "acceptance_seq": acceptance_seq(rounds),
            }  # fmt: skip
            f.write(json.dumps(row) + "\n")
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
    from edgespec.sim.scenario import scenario_from_dict
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
