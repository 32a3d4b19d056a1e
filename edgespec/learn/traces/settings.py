"""What ``edgespec trace`` runs per prompt (:class:`CaptureSettings`, the window it asks
for, the prompt's sampling seed) and the pair's names (:class:`PairInfo`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from edgespec.core.sampling_cuts import cuts_on
from edgespec.core.types import SamplingParams
from edgespec.policies.interfaces import WindowPolicy
from edgespec.policies.stop_drafting import DraftStopPolicy
from edgespec.policies.window import DynamicWindow, StaticWindow


@dataclass(frozen=True, slots=True)
class CaptureSettings:
    """What to run per prompt."""

    gamma_max: int = 4
    max_new_tokens: int = 64
    target_only: bool = False
    assisted: bool = False
    slo_classes: tuple[str, ...] = ("default",)
    num_drafters: int = 8
    arrival_rate_per_s: float = 1.0
    seed: int = 0
    draft_tree: str | None = None
    """The token-tree branching drafted (``edgespec trace --tree``), None for chains."""
    window: str = "static"
    """``static`` (γ = ``gamma_max`` every round) or ``dynamic``
    (:class:`~edgespec.policies.window.DynamicWindow` from ``gamma_max``)."""
    stop: DraftStopPolicy | None = None
    """A stop predictor ending each block at its first predicted rejection (K_max = γ)."""
    temperature: float = 0.0
    """0: greedy; > 0: sampled, prompt i with seed ``seed`` + i (``edgespec trace
    --temperature``), its rows cut to ``top_k`` tokens, the ``top_p`` nucleus and ``min_p``
    as :class:`~edgespec.core.types.SamplingParams` cuts them."""
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.temperature < float("inf"):
            raise ValueError(f"temperature must be finite and >= 0, got {self.temperature}")
        if self.temperature == 0 and cuts_on(self.top_p, self.top_k, self.min_p):
            raise ValueError("top_k, top_p and min_p cut a sampled row: they need temperature > 0")
        if self.window not in WINDOWS:
            raise ValueError(f"window must be one of {', '.join(WINDOWS)}, got {self.window!r}")
        if not self.slo_classes or not all(self.slo_classes):
            raise ValueError(f"slo_classes must be non-empty names, got {self.slo_classes!r}")
        if self.num_drafters < 1:
            raise ValueError(f"num_drafters must be >= 1, got {self.num_drafters}")


WINDOWS = ("static", "dynamic")
DYNAMIC_MAX_GAMMA = 8
"""The dynamic window's largest γ (DynamicWindow's default), or ``gamma_max`` if larger."""


def capture_window(settings: CaptureSettings) -> WindowPolicy:
    """The window policy ``settings`` ask for."""
    if settings.window == "dynamic":
        top = max(settings.gamma_max, DYNAMIC_MAX_GAMMA)
        return DynamicWindow(initial_gamma=settings.gamma_max, max_gamma=top)
    return StaticWindow(settings.gamma_max)


@dataclass(frozen=True, slots=True)
class PairInfo:
    """Names written into the trace, and the HF models the baselines run (plain decoding
    needs ``target_model``, assisted generation both)."""

    target_name: str
    draft_name: str
    target_model: Any = None
    draft_model: Any = None


def prompt_seed(settings: CaptureSettings, index: int) -> int:
    """The seed of prompt ``index``'s sampling: ``settings.seed`` + ``index``."""
    return settings.seed + index


def prompt_sampling(settings: CaptureSettings, index: int) -> SamplingParams:
    """How prompt ``index`` is decoded: greedy, or sampled as ``settings`` say with the
    prompt's seed."""
    sampled = settings.temperature > 0
    return SamplingParams(
        max_new_tokens=settings.max_new_tokens,
        temperature=settings.temperature,
        seed=prompt_seed(settings, index) if sampled else None,
        top_k=settings.top_k,
        top_p=settings.top_p,
        min_p=settings.min_p,
    )
