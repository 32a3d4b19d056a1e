"""A request's ``n`` choices (:func:`run_choices`): generated one after another in the
request's worker, each in a session of its own, choice i seeded ``seed + i`` when the
request is seeded (as vLLM seeds its parallel samples; unseeded, each draws fresh
entropy), with a window policy of its own; their text deltas tagged with the choice's
index. Greedy choices are alike. A batch of prompts (:mod:`.prompt_batch`): each prompt's
choices in turn (:func:`run_prompts`)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from edgespec.core.wire_limits import SEED_LIMIT
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.generation import Completion, PreparedRequest, run_request
from edgespec.runtime.openai_api.logprob_fields import ChoiceLogprobs


@dataclass(frozen=True, slots=True)
class Choices:
    """A request's completions, in index order (one without ``n``), and its prompts'
    tokens (each prompt's once)."""

    completions: tuple[Completion, ...]
    prompt_tokens: int

    @property
    def completion_tokens(self) -> int:
        """The tokens of every choice's text (OpenAI's usage counts them all)."""
        return sum(c.completion_tokens for c in self.completions)


def choice_seed(seed: int | None, index: int) -> int | None:
    """Choice ``index``'s seed: ``seed + index`` (below the wire's limit), ``None`` unseeded."""
    return None if seed is None else (seed + index) % SEED_LIMIT


def run_choices(
    setup: EdgeSetup,
    prepared: PreparedRequest,
    on_text: Callable[[int, str, ChoiceLogprobs | None], None],
    cancel: threading.Event,
) -> Choices:
    """Generate ``prepared``'s ``n`` choices in turn; ``on_text(index, delta, logprobs)``
    as rounds commit. The first error ends them all (raised as :func:`run_request` raises it)."""
    done = []
    for index in range(prepared.request.n):
        sampling = dataclasses.replace(prepared.sampling,
                                       seed=choice_seed(prepared.sampling.seed, index))  # fmt: skip
        window = prepared.window if index == 0 else prepared.more_windows[index - 1]
        one = dataclasses.replace(prepared, sampling=sampling, window=window)
        done.append(run_request(setup, one, partial(on_text, index), cancel))
    return Choices(tuple(done), done[0].prompt_tokens)


def run_prompts(
    setup: EdgeSetup,
    prepared: tuple[PreparedRequest, ...],
    on_text: Callable[[int, str, ChoiceLogprobs | None], None],
    cancel: threading.Event,
) -> Choices:
    """Each of a batch's ``prepared`` prompts' choices in turn (:func:`run_choices`), prompt
    i's choice j at index ``i * n + j``; usage counts each prompt once."""
    done = []
    for i, one in enumerate(prepared):
        first = i * one.request.n
        done.append(run_choices(setup, one, lambda j, *text, f=first: on_text(f + j, *text),
                                cancel))  # fmt: skip
    completions = tuple(c for choices in done for c in choices.completions)
    return Choices(completions, sum(choices.prompt_tokens for choices in done))
