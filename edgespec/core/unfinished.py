"""What a run leaves unfinished: the requests that arrived inside it and had not finished
at its end, by SLO class, and the rule that says one is already sure to miss its target."""

from __future__ import annotations

from dataclasses import dataclass

from edgespec.core.types import Request


@dataclass(frozen=True, slots=True)
class UnfinishedClass:
    """The unfinished requests of one SLO class with a token-speed target: how many, and how
    many of them are already sure to miss it (their output could not reach the target
    speed even if it all came at the run's end: :func:`already_missed`)."""

    slo_class: str
    target_tokens_per_s: float
    num_with_target: int
    num_missed: int

    def __post_init__(self) -> None:
        if not 0 <= self.num_missed <= self.num_with_target:
            raise ValueError(
                f"unfinished requests of class {self.slo_class!r} need 0 <= num_missed <= "
                f"num_with_target, got {self.num_missed}, {self.num_with_target}"
            )


@dataclass(frozen=True, slots=True)
class UnfinishedCount:
    """The requests that arrived inside a run and had not finished at its end, and those
    of them in each SLO class with a target (``classes``)."""

    num_requests: int
    classes: tuple[UnfinishedClass, ...] = ()

    def __post_init__(self) -> None:
        with_target = sum(c.num_with_target for c in self.classes)
        if not 0 <= with_target <= self.num_requests:
            raise ValueError(
                "unfinished requests need 0 <= num_with_target <= num_requests, got "
                f"{with_target}, {self.num_requests}"
            )

    def plus(self, other: UnfinishedCount) -> UnfinishedCount:
        """Both counts together (two shards of one run; a class may appear twice)."""
        return UnfinishedCount(self.num_requests + other.num_requests, self.classes + other.classes)


def already_missed(request: Request, target_tokens_per_s: float, end_s: float) -> bool:
    """Whether ``request``, unfinished at ``end_s``, misses ``target_tokens_per_s`` however
    it goes on: its token speed (output tokens over end-to-end time, at most
    ``num_output_tokens`` of them, finishing after ``end_s``) stays below
    ``num_output_tokens / (end_s - arrival_s)``, so a target at or above that is missed."""
    return request.num_output_tokens <= target_tokens_per_s * (end_s - request.arrival_s)
