"""Test window policies for per-round fused/distributed switching."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from edgespec.policies.interfaces import WindowDecision, WindowObservation

FUSED_GAMMA = 4
DISTRIBUTED_GAMMA = 2


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
