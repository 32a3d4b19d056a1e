"""What one simulation of the edge drafting server reports (Zhu et al., seed 001)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class PipelineSimResult:
    """Times in seconds from the start of the uploads.

    ``makespan_s`` is Eq. 23's T (the last verification's end); ``upload_s`` T_com, the
    last user's upload end (Eq. 16); ``inference_start_s`` when the SBS started its first
    draft (``upload_s`` under the step barrier). ``batch_steps``: decoding steps each
    batch ran (plan order); ``batch_finish_s``: when each batch's last verification
    ended; ``task_finish_s``: when each task's output was complete (its O_k-th token
    committed; a task keeps being padded in its batch after that); ``task_tokens``: tokens
    committed per task (≥ O_k; L per step in ``expected`` mode). ``step_durations_s``:
    T_n per step under the step barrier (Eq. 21), empty without it. ``sbs_busy_s`` /
    ``mbs_busy_s``: the accelerators' busy seconds. ``num_passes``: verification passes;
    ``num_blocks``: per-task blocks verified; ``deadline_misses``: blocks verified after
    their SLO deadline (0 without an SLO)."""

    makespan_s: float
    upload_s: float
    inference_start_s: float
    batch_steps: tuple[int, ...]
    batch_finish_s: tuple[float, ...]
    task_finish_s: tuple[float, ...]
    task_tokens: tuple[float, ...]
    step_durations_s: tuple[float, ...]
    sbs_busy_s: float
    mbs_busy_s: float
    num_events: int
    num_passes: int
    num_blocks: int
    deadline_misses: int = 0

    @property
    def inference_s(self) -> float:
        """T_inf = T − T_com (Eq. 23; Σ_n T_n under the step barrier, Eq. 22)."""
        return self.makespan_s - self.upload_s

    @property
    def busy_window_s(self) -> float:
        """From the first draft to the last verification."""
        return self.makespan_s - self.inference_start_s

    @property
    def sbs_utilisation(self) -> float:
        """SBS busy seconds over :attr:`busy_window_s`."""
        return self.sbs_busy_s / self.busy_window_s if self.busy_window_s > 0 else 0.0

    @property
    def mbs_utilisation(self) -> float:
        """MBS busy seconds over :attr:`busy_window_s`."""
        return self.mbs_busy_s / self.busy_window_s if self.busy_window_s > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The fields plus the derived times and utilisations, JSON-ready."""
        data = asdict(self)
        for name in ("batch_steps", "batch_finish_s", "task_finish_s", "task_tokens"):
            data[name] = list(data[name])
        data["step_durations_s"] = list(self.step_durations_s)
        data["inference_s"] = self.inference_s
        data["sbs_utilisation"] = self.sbs_utilisation
        data["mbs_utilisation"] = self.mbs_utilisation
        return data
