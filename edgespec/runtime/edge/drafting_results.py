"""What a drafting-server run returns (:mod:`edgespec.runtime.edge.drafting_server`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class SessionOutput:
    """What one session committed, and its rounds' draft counts."""

    session_id: str
    output_token_ids: tuple[int, ...]
    num_rounds: int
    num_drafted: int
    num_accepted: int


@dataclass(frozen=True, slots=True)
class DraftingServerResult:
    """A drafting-server run: every session's output (in prompt order) and the run's
    timing. ``wall_s``: from the first session's opening to the last reply;
    ``draft_s``: time spent drafting; ``verify_wait_s``: time the drafting thread
    spent waiting for verification replies (pipelining hides verification behind
    drafting, so this shrinks); ``batch_size``: the largest batch run, min(batch size,
    sessions) for consecutive batches (3 sessions in batches of 4 ran one batch of 3)."""

    sessions: tuple[SessionOutput, ...]
    pipelined: bool
    batch_size: int
    gamma: int
    num_steps: int
    num_draft_passes: int
    wall_s: float
    draft_s: float
    verify_wait_s: float
    schedule: tuple[tuple[int, ...], ...] = ()
    """Per step, the batches drafted in that step, by their index in the run's batches."""
    num_resends: int = 0
    """Verify calls sent again after their deadline (the server held their pass)."""

    @property
    def output_token_ids(self) -> tuple[tuple[int, ...], ...]:
        return tuple(s.output_token_ids for s in self.sessions)

    @property
    def num_output_tokens(self) -> int:
        return sum(len(s.output_token_ids) for s in self.sessions)

    @property
    def tokens_per_s(self) -> float:
        return self.num_output_tokens / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def accepted_per_round(self) -> float:
        rounds = sum(s.num_rounds for s in self.sessions)
        return sum(s.num_accepted for s in self.sessions) / rounds if rounds else 0.0

    def summary(self) -> dict[str, Any]:
        """The run's figures (not the outputs), for JSON."""
        return {
            "pipelined": self.pipelined,
            "wall_s": self.wall_s,
            "tokens_per_s": self.tokens_per_s,
            "num_output_tokens": self.num_output_tokens,
            "num_steps": self.num_steps,
            "num_draft_passes": self.num_draft_passes,
            "draft_s": self.draft_s,
            "verify_wait_s": self.verify_wait_s,
            "num_rounds": sum(s.num_rounds for s in self.sessions),
            "accepted_per_round": self.accepted_per_round,
            "num_resends": self.num_resends,
        }
