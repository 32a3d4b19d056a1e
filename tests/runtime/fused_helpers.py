"""Test window policies for per-round fused/distributed switching, and a drafter's request
to a loopback server (:func:`generate_at`)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from edgespec.core.types import SamplingParams
from edgespec.policies.interfaces import WindowDecision, WindowObservation
from edgespec.policies.window import StaticWindow
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.edge.drafter import DraftOptions, GenerationResult, generate
from edgespec.runtime.wire.grpc_client import RemoteVerifier

FUSED_GAMMA = 4
DISTRIBUTED_GAMMA = 2

PROMPT = (5, 6, 7, 8, 9)
GREEDY = SamplingParams(max_new_tokens=16)
ALWAYS_FUSED = StaticWindow(3, fused=True)


def generate_at(port: int, session_id: str, window: Any, drafter: Any = None) -> GenerationResult:
    """:data:`PROMPT` generated (:data:`GREEDY`) against the server at ``port`` under
    ``window``, drafted by ``drafter`` (default: prompt lookup)."""
    return generate(
        RemoteVerifier(f"127.0.0.1:{port}"),
        drafter if drafter is not None else NgramDrafter(),
        PROMPT,
        GREEDY,
        DraftOptions(session_id=session_id),
        window,
    )


class ScriptedWindow:
    """Answers fused at its i-th consultation when ``script[i]`` is true (γ 4), else
    distributed (γ 2; also after the script). Records every observation it is shown and
    where: ``on_device[i]`` when the i-th consultation ran on the main thread (the test's
    drafter), not on a server worker thread.

    One object serves as the device's policy and the server's, so ``seen`` lists the
    consultations of the session wherever its rounds ran: one per round."""

    def __init__(self, script: Sequence[bool] = ()) -> None:
        self._lock = threading.Lock()
        self.script = tuple(script)
        self.seen: list[WindowObservation] = []
        self.on_device: list[bool] = []

    def reset(self, script: Sequence[bool]) -> None:
        with self._lock:
            self.script = tuple(script)
            self.seen = []
            self.on_device = []

    def fused_at(self, index: int) -> bool:
        return index < len(self.script) and self.script[index]

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        with self._lock:
            fused = self.fused_at(len(self.seen))
            self.seen.append(obs)
            self.on_device.append(threading.current_thread() is threading.main_thread())
        return WindowDecision(FUSED_GAMMA if fused else DISTRIBUTED_GAMMA, fused)


def gamma_at(policy: ScriptedWindow, index: int) -> int:
    return FUSED_GAMMA if policy.fused_at(index) else DISTRIBUTED_GAMMA
