"""``echo`` with ``logprobs`` on ``/v1/completions`` (was a 400): the prompt's tokens come
first, the first with ``null``, each other with its log-probability under the target's
row before it, as lm-evaluation-harness's loglikelihood requests read them (token ids
in, ``max_tokens`` 1, ``logprobs`` 1), then the completion's, offsets counting the echoed
text; streamed, the echo's chunk carries the prompt's and the stream equals the whole;
``max_tokens`` 0 (OpenAI's legacy scoring request) the prompt alone. Each in both modes:
distributed (the prompt's log-probabilities with the first verification) and centralized
(with the server's ``Generate`` stream's first chunk)."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.greedy_oracles import target_logprobs
from tests.runtime.openai_api.conftest import MODEL, _error, word_tokenizer

TOKENIZER = word_tokenizer(64)
PROMPT = [5, 6, 7, 40, 41, 2, 9]


@pytest.fixture(params=["distributed", "centralized"])
def mode(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The request's ``extra_body`` choosing its mode."""
    return {"edgespec": {"mode": request.param}}


def _text(ids: Any) -> str:
    return str(TOKENIZER.decode(list(ids)))


def test_an_echoed_prompts_tokens_come_first_with_their_log_probabilities(
    client: Any, target: TransformersTarget, mode: dict[str, Any]
) -> None:
    greedy = target_greedy_decode(target, tuple(PROMPT), 2)
    out = client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=2, echo=True,
                                    logprobs=1, temperature=0, extra_body=mode)  # fmt: skip
    choice = out.choices[0]
    assert choice.text == _text(PROMPT) + _text(greedy)
    got = choice.logprobs
    assert got.tokens == [_text([t]) for t in (*PROMPT, *greedy)]
    assert got.text_offset == [len(_text(PROMPT[:i])) for i in range(len(PROMPT))] + [
        len(_text(PROMPT)), len(_text(PROMPT)) + len(_text(greedy[:1]))]  # fmt: skip
    scored = target_logprobs(target, tuple(PROMPT[:1]), tuple(PROMPT[1:]), 1)
    completion = target_logprobs(target, tuple(PROMPT), greedy, 1)
    assert got.token_logprobs[0] is None and got.top_logprobs[0] is None
    want = [lp for lp, _ in scored + completion]
    assert got.token_logprobs[1:] == pytest.approx(want, abs=1e-4)
    for top, (_, alternatives) in zip(got.top_logprobs[1:], scored + completion, strict=True):
        assert list(top) == [_text([t]) for t, _ in alternatives]
        assert list(top.values()) == pytest.approx([lp for _, lp in alternatives], abs=1e-4)
    assert out.usage.prompt_tokens == len(PROMPT) and out.usage.completion_tokens == 2


def test_streamed_the_echos_chunk_carries_the_prompts(client: Any, mode: dict[str, Any]) -> None:
    ask: dict[str, Any] = {"prompt": PROMPT, "max_tokens": 6, "echo": True, "logprobs": 2,
                           "extra_body": mode}  # fmt: skip
    whole = client.completions.create(model=MODEL, **ask).choices[0]
    parts = [c.choices[0] for c in client.completions.create(model=MODEL, **ask, stream=True)]
    assert parts[0].text == _text(PROMPT)
    assert parts[0].logprobs.tokens == [_text([t]) for t in PROMPT]
    for field in ("tokens", "token_logprobs", "top_logprobs", "text_offset"):
        streamed = [v for p in parts if p.logprobs for v in getattr(p.logprobs, field)]
        assert streamed == getattr(whole.logprobs, field)
    assert "".join(p.text for p in parts) == whole.text


def test_a_one_token_prompt_and_echo_without_logprobs(client: Any, mode: dict[str, Any]) -> None:
    out = client.completions.create(model=MODEL, prompt=[5], max_tokens=1, echo=True,
                                    logprobs=0, extra_body=mode)  # fmt: skip
    got = out.choices[0].logprobs
    assert got.tokens[0] == "w5" and got.token_logprobs[0] is None and len(got.tokens) == 2
    assert got.top_logprobs == [None, {}]
    plain = client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=1, echo=True,
                                      extra_body=mode)  # fmt: skip
    assert plain.choices[0].logprobs is None and plain.choices[0].text.startswith(_text(PROMPT))


def test_max_tokens_0_scores_the_prompt_alone(
    client: Any, api: Any, target: TransformersTarget, mode: dict[str, Any]
) -> None:
    """OpenAI's legacy completions' scoring request: the echoed prompt with its
    log-probabilities, no completion (the one token the session commits is not shown);
    without echo a 400."""

    out = client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=0, echo=True,
                                    logprobs=0, extra_body=mode)  # fmt: skip
    choice = out.choices[0]
    assert (choice.text, choice.finish_reason) == (_text(PROMPT), "length")
    assert choice.logprobs.tokens == [_text([t]) for t in PROMPT]
    scored = target_logprobs(target, tuple(PROMPT[:1]), tuple(PROMPT[1:]), 0)
    assert choice.logprobs.token_logprobs[1:] == pytest.approx([lp for lp, _ in scored], abs=1e-4)
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (len(PROMPT), 0)
    streamed = list(client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=0,
                                              echo=True, stream=True, extra_body=mode))  # fmt: skip
    assert "".join(c.choices[0].text for c in streamed if c.choices) == _text(PROMPT)
    status, error = _error(api, {"model": MODEL, "prompt": "w1", "max_tokens": 0, **mode})
    message = "max_tokens 0 returns the prompt alone: it needs echo: true"
    assert (status, error["param"], error["message"]) == (400, "max_tokens", message)


def test_every_offset_of_an_echoed_text_prompt_indexes_the_text(client: Any) -> None:
    """``w5   w6 w7`` (ids 5 6 7, decoded ``w5w6w7``): the echo was the prompt as typed, its
    tokens' offsets (0, 2, 4) counted in ``w5w6w7``, the completion's in the typed text."""
    out = client.completions.create(model=MODEL, prompt="w5   w6 w7", max_tokens=2, echo=True,
                                    logprobs=0, temperature=0)  # fmt: skip
    choice = out.choices[0]
    assert choice.text.startswith("w5w6w7")
    logprobs = choice.logprobs
    assert logprobs is not None and len(logprobs.tokens) == 5
    for token, offset in zip(logprobs.tokens, logprobs.text_offset, strict=True):
        assert choice.text[offset:].startswith(token), (token, offset, choice.text)
