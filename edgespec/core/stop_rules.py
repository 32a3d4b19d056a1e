"""Where a generation may end, beside its token budget: at an end of sequence (unless it
ignores them), at one of its ``stop_token_ids`` (vLLM's: at most
:data:`MAX_STOP_TOKEN_IDS`, committed then ended on, as an end of sequence), and not before
``min_tokens`` output tokens (vLLM's: until then the target's rows give those tokens no
probability, greedy decoding included); and the stop sequences the device cuts its text at
(the OpenAI endpoint's ``stop``, ``edgespec draft --stop``: at most :data:`MAX_STOP` of
at most :data:`MAX_STOP_CHARS` characters). Their ranges, checked wherever they enter
(:class:`~edgespec.core.types.SamplingParams`, the drafter's config, the OpenAI endpoint)."""

from __future__ import annotations

from edgespec.core.wire_limits import UINT32_LIMIT

MAX_STOP_TOKEN_IDS = 128
"""The most ``stop_token_ids`` a generation names (the OpenAI endpoint's 64 a request names
and its chat template's end-of-turn tokens among them)."""

MAX_STOP = 4
"""The most stop sequences a generation names (OpenAI's ``stop``)."""
MAX_STOP_CHARS = 256
"""The longest stop sequence: the text stream holds back what may begin one, looking at
every prefix of it after each token (time grows with its length squared)."""


def stop_sequences_problem(stops: tuple[str, ...]) -> str | None:
    """Why ``stops`` are not stop sequences the device's text stream cuts at."""
    if len(stops) > MAX_STOP:
        return f"takes at most {MAX_STOP} sequences, got {len(stops)}"
    if not all(isinstance(s, str) and s for s in stops):
        return f"must be non-empty strings, got {list(stops)[:MAX_STOP]!r}"
    longest = max((len(s) for s in stops), default=0)
    if longest > MAX_STOP_CHARS:
        return f"a stop sequence has at most {MAX_STOP_CHARS} characters, got {longest}"
    return None


def stop_token_ids_problem(stop_token_ids: tuple[int, ...]) -> str | None:
    """Why ``stop_token_ids`` (ascending, each once) is not a set of ids the wire carries."""
    if len(stop_token_ids) > MAX_STOP_TOKEN_IDS:
        return f"names at most {MAX_STOP_TOKEN_IDS} tokens, got {len(stop_token_ids)}"
    ids = list(stop_token_ids)
    if ids != sorted(set(ids)) or any(not 0 <= t < UINT32_LIMIT for t in ids):
        return f"must be token ids in [0, 2**32), once each, ascending, got {ids[:5]}"
    return None


def min_tokens_problem(min_tokens: int, max_new_tokens: int) -> str | None:
    """Why ``min_tokens`` is no count of output tokens before the generation may end."""
    if not 0 <= min_tokens <= max_new_tokens:
        return f"must be in [0, max_new_tokens = {max_new_tokens}], got {min_tokens}"
    return None
