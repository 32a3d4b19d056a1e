"""Model backends behind :class:`TargetBackend` / :class:`DraftBackend`."""

from edgespec.runtime.backends.base import (
    DraftBackend,
    DraftProposal,
    ForwardItem,
    ForwardOutput,
    KVState,
    TargetBackend,
)

__all__ = [
    "DraftBackend",
    "DraftProposal",
    "ForwardItem",
    "ForwardOutput",
    "KVState",
    "TargetBackend",
]
