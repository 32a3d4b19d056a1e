"""Adding a window policy, and running it in both hosts.

A window policy chooses the draft window γ of a session's next round (and whether the round
runs fused on the server). This script adds one, ``BackoffWindow``: a fixed γ that backs off
to a shorter window after a round in which the server accepted none of the draft, and
returns to γ once a round accepts again. It registers the policy by name, then runs it:

1. against a verification server started in this process (loopback gRPC), with a tiny
   random Llama as the target and a noisy copy of it as the draft, both built here: the
   drafter's output must equal the target's own greedy decoding (lossless);
2. in the simulator, through the ``edgespec sim`` command, on a scenario that names the
   policy (``policies.window.name: fixed_backoff``) and replays the acceptance the real run
   measured: the simulated rounds must be the real ones, round for round (γ drafted,
   accepted, committed), because both hosts build the policy's observation the same way.

Run it with ``python examples/window_policy.py`` from the repository root (a few seconds;
tests/examples/test_examples.py runs it). The rules a policy follows are in
docs/SIMULATOR.md, "Adding a policy", step by step: a pure, frozen dataclass whose fields
are its parameters (a value out of range refused with ``PolicyParamError``, naming the
parameter), with a class attribute ``may_fuse`` saying whether it may answer ``fused=True``.

To keep a policy, add it to ``edgespec/policies/registry.py``: to ``WINDOW`` by name and to
``WINDOW_FUSES`` (the same fact as ``may_fuse``, from its parameters), as
:func:`registered` does here for the length of the script. Then the tests ask for the rest:
its parameters in ``WINDOWS`` of tests/parity/test_window_parity.py (the runtime against
the simulator, round by round, and ``edgespec sim``'s own handler set), and
tests/policies/test_registry.py checks that ``WINDOW_FUSES`` and ``may_fuse`` agree.
A registration by assignment, as here, is seen by this process (and processes forked from
it) only: Ray's workers and freshly started processes import ``edgespec/policies/registry.py``
anew, so a sweep on them needs the policy in that module.
"""

from __future__ import annotations

import csv
import json
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from edgespec.cli import main as edgespec_main
from edgespec.core.types import RoundRecord, SamplingParams
from edgespec.policies.interfaces import WindowDecision, WindowObservation
from edgespec.policies.params import PolicyParamError
from edgespec.policies.registry import WINDOW, WINDOW_FUSES, build_policy

NAME = "fixed_backoff"
PARAMS: dict[str, Any] = {"gamma": 4, "backoff_gamma": 1}
PROMPT = (5, 9, 14, 3, 27, 41, 8, 19)
MAX_NEW_TOKENS = 48
Round = tuple[int, int, int]  # drafted, accepted, committed


@dataclass(frozen=True, slots=True)
class BackoffWindow:
    """γ = ``gamma``; after a round that accepted no draft token, ``backoff_gamma`` until a
    round accepts one again. Never fused. It reads only the last round's accepted count, so
    it keeps no state: both hosts give it the same observation and get the same answer."""

    # Never fused: the simulator may run it on its faster distributed-only handler sets.
    # A policy that may answer fused=True says True; one that says nothing and goes fused
    # stops `edgespec sim` at that answer (docs/SIMULATOR.md, "Adding a policy", step 2).
    may_fuse: ClassVar[bool] = False
    gamma: int = 4  # int parameters: a config value of another type is refused at it
    backoff_gamma: int = 1

    def __post_init__(self) -> None:
        if not 1 <= self.backoff_gamma <= self.gamma:  # at policies.window.params.backoff_gamma
            raise PolicyParamError(
                "backoff_gamma",
                f"need 1 <= backoff_gamma <= gamma, got {self.backoff_gamma}, {self.gamma}",
            )

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        if obs.last_num_accepted == 0:  # None before the first round: the full window
            return WindowDecision(self.backoff_gamma)
        return WindowDecision(self.gamma)


@contextmanager
def registered() -> Iterator[None]:
    """The policy by name, for every config and scenario this process reads meanwhile; a
    policy that stays goes into the registry module. Assigned here, it is not seen by Ray's
    workers (``edgespec sim --sweep ... --engine ray``) nor by processes started afresh
    (spawn, forkserver), which import the registry module anew: their runs stop with
    ``unknown window policy 'fixed_backoff'``."""
    WINDOW[NAME] = BackoffWindow
    WINDOW_FUSES[NAME] = lambda params: False  # BackoffWindow.may_fuse, from its params
    try:
        yield
    finally:
        del WINDOW[NAME], WINDOW_FUSES[NAME]


def real_rounds() -> tuple[list[Round], list[int]]:
    """The policy over loopback gRPC: the rounds it ran, and the acceptance of each output
    position (whether the draft's greedy token on the target's prefix is the target's)."""
    import torch

    from edgespec.config import from_dict
    from edgespec.runtime.backends.transformers_backend import TransformersTarget
    from edgespec.runtime.backends.transformers_draft import TransformersDraft
    from edgespec.runtime.edge.drafter import DraftOptions, generate
    from edgespec.runtime.server.config import ServerConfig
    from edgespec.runtime.server.engine import VerificationEngine
    from edgespec.runtime.server.service import VerificationService
    from edgespec.runtime.testing import noisy_copy, tiny_llama
    from edgespec.runtime.wire.grpc_client import RemoteVerifier
    from edgespec.runtime.wire.inprocess import target_greedy_decode
    from edgespec.runtime.wire.server_thread import ServerThread

    torch.set_num_threads(1)
    target_model = tiny_llama(seed=0)
    target = TransformersTarget(target_model)
    draft = TransformersDraft(noisy_copy(target_model, noise=0.4, seed=1))
    config = from_dict(ServerConfig, {"port": 0})

    def service() -> VerificationService:
        engine = VerificationEngine(target, config.kv_budget_tokens, config.max_sessions)
        return VerificationService(engine, config, build_policy("batching", "fcfs"))

    server = ServerThread(service).start()
    try:
        result = generate(
            RemoteVerifier(f"127.0.0.1:{server.port}"),
            draft,
            PROMPT,
            SamplingParams(max_new_tokens=MAX_NEW_TOKENS),
            DraftOptions(session_id="example"),
            build_policy("window", NAME, PARAMS),
        )
    finally:
        server.stop(grace_s=0)
    reference = target_greedy_decode(target, PROMPT, MAX_NEW_TOKENS)
    if tuple(result.output_token_ids) != tuple(reference):
        raise SystemExit("the distributed output differs from the target's greedy decoding")
    return _rounds(result.rounds), _acceptance(draft, reference)


def _rounds(records: Sequence[RoundRecord]) -> list[Round]:
    return [(r.num_drafted, r.num_accepted, r.num_committed) for r in records]


def _acceptance(draft: Any, output: Sequence[int]) -> list[int]:
    """One 0/1 per output position, as ``edgespec trace`` records ``acceptance_seq``."""
    draft.reset()
    rng, context, seq = np.random.default_rng(0), list(PROMPT), []
    for token in output:
        seq.append(int(draft.propose(context, 1, 0.0, rng).token_ids[0] == token))
        context.append(token)
    return seq


def simulated_rounds(acceptance: list[int], folder: Path) -> list[Round]:
    """The policy, by name, in ``edgespec sim``: one device replays the real request's
    acceptance; ``--rounds`` writes its rounds to the run folder's rounds.csv."""
    trace = folder / "trace.jsonl"
    row = {
        "request_id": "example",
        "arrival_ms": 0.0,
        "prompt_tokens": len(PROMPT),
        "output_tokens": MAX_NEW_TOKENS,
        "drafter_id": 0,
        "acceptance_seq": acceptance,
    }
    trace.write_text(json.dumps(row) + "\n")
    scenario = {
        "name": "window-policy-example",
        "seed": 1,
        "duration_s": 60.0,
        "auto_topology": {"devices": [{"count": 1}], "servers": [{"count": 1}]},
        "acceptance": {"kind": "trace"},
        "workload": {"kind": "trace", "trace": str(trace)},
        "policies": {"window": {"name": NAME, "params": PARAMS}},
    }
    file = folder / "scenario.json"  # YAML's superset: the sim command reads it as YAML
    file.write_text(json.dumps(scenario))
    out = folder / "run"
    status = edgespec_main(
        ["sim", str(file), "--rounds", "--quiet", "--no-plots", "--out", str(out)]
    )
    if status != 0:
        raise SystemExit(f"edgespec sim exited with {status}")
    with (out / "rounds.csv").open() as handle:
        return [
            (int(r["num_drafted"]), int(r["num_accepted"]), int(r["num_committed"]))
            for r in csv.DictReader(handle)
        ]


def main() -> int:
    with registered(), tempfile.TemporaryDirectory() as folder:
        real, acceptance = real_rounds()
        simulated = simulated_rounds(acceptance, Path(folder))
    windows = " ".join(str(drafted) for drafted, _, _ in real)
    backoffs = sum(1 for _, accepted, _ in real[:-1] if accepted == 0)
    print(f"real server: {len(real)} rounds, drafted per round: {windows}")
    print(f"backed off after a round that accepted nothing: {backoffs} times")
    if simulated != real:
        print(f"the simulator's rounds differ: {simulated}")
        return 1
    print(f"simulator: the same {len(simulated)} rounds (drafted, accepted, committed)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
