"""What every request of the endpoint shares (:class:`EdgeSetup`): the drafter config, the
draft model, the tokenizer, the servers' clients and what their Health said, the clock."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from edgespec.runtime.openai_api.chat_prompt import special_ids
from edgespec.runtime.openai_api.throttle import RefusedCredentials


@dataclass(frozen=True, slots=True)
class EdgeSetup:
    """What every request shares: the drafter config, the draft model (``None`` for prompt
    lookup), the tokenizer, the target's vocabulary size, the tree size cap, the
    verification servers' clients and, with several, the routing policy across them, what
    the servers' Health reports (``None``: it does not say): the target's context, the
    longest draft block, the SLO classes, the target's name; the clock the requests'
    retries and records are timed on; the log of the servers' refusals of the endpoint's
    own credentials (its 502s, told by the app as it answers them); the servers that
    answered as the endpoint started (reachable from its first ``/ready`` on); the servers
    known to be down now, which routing does not ask (the app's watch,
    :meth:`.health.Health.known_down`; ``None``: routing asks every one); whether it drafts
    (``False``: started with ``--mode centralized``, every request the server's own
    decoding). The tokenizer's special tokens (:func:`.chat_prompt.special_ids`) are read
    once, as it is built."""

    config: Any  # DrafterConfig
    draft_model: Any
    tokenizer: Any
    vocab_size: int
    max_nodes: int
    verifiers: tuple[Any, ...]
    routing: Any = None
    max_context_tokens: int | None = None
    max_draft_tokens: int | None = None
    slo_classes: frozenset[str] | None = None
    target_name: str | None = None
    clock: Callable[[], float] = time.perf_counter
    refusals: RefusedCredentials = dataclasses.field(default_factory=RefusedCredentials)
    answered_at_start: frozenset[str] = frozenset()
    known_down: Callable[[], frozenset[int]] | None = None
    drafts: bool = True  # False: started with --mode centralized, no drafter loaded
    runs_fused_rounds: bool | None = None  # False: a server says it runs none
    special_ids: frozenset[int] = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        # derived once (the class is frozen)
        object.__setattr__(self, "special_ids", special_ids(self.tokenizer))
