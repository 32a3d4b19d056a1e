"""A batch of prompts on ``/v1/completions`` (was a 400, "one prompt per request"): a list
of strings or of token-id lists, as lm-evaluation-harness's ``local-completions`` sends
every request (a single prompt as a list of one). Each prompt's choices are what it
alone gives, prompt i's choice j at index i * n + j, whole or streamed; usage counts
each prompt once; an error names the prompt's place, the list's length is refused
before any prompt is read."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.runtime.openai_api.serve import ApiThread
from tests.runtime.openai_api.conftest import MODEL, _error, _post, word_tokenizer

TOKENIZER = word_tokenizer(64)


def _alone(client: Any, prompt: Any, **ask: Any) -> list[Any]:
    out = client.completions.create(model=MODEL, prompt=prompt, **ask)
    return sorted(out.choices, key=lambda c: c.index)


def test_each_prompts_choices_are_what_it_alone_gives(client: Any) -> None:
    prompts = [[5, 6, 7], "w9 w3 w12 w30", [40, 41]]
    ask: dict[str, Any] = {"max_tokens": 6, "temperature": 1.0, "seed": 11, "n": 2}
    out = client.completions.create(model=MODEL, prompt=prompts, **ask)
    assert [c.index for c in out.choices] == list(range(6))
    alone = [client.completions.create(model=MODEL, prompt=p, **ask) for p in prompts]
    want = [c.text for one in alone for c in sorted(one.choices, key=lambda c: c.index)]
    assert [c.text for c in out.choices] == want and len(set(want)) > 2
    assert out.usage.prompt_tokens == 3 + 4 + 2  # each prompt once, not once per choice
    assert out.usage.completion_tokens == sum(one.usage.completion_tokens for one in alone)
    streamed: dict[int, str] = {}
    for chunk in client.completions.create(model=MODEL, prompt=prompts, stream=True, **ask):
        for choice in chunk.choices:
            streamed[choice.index] = streamed.get(choice.index, "") + choice.text
    assert [streamed[i] for i in range(6)] == want


def test_lm_evaluation_harness_loglikelihood_request(client: Any) -> None:
    """local-completions' loglikelihood payload: token ids as a batch of one, temperature 0,
    max_tokens 1, logprobs 1, echo, a seed; read as ``token_logprobs[ctxlen:-1]``."""
    context, continuation = [5, 6, 7, 40], [41, 2]
    ask: dict[str, Any] = {"temperature": 0, "max_tokens": 1, "logprobs": 1, "seed": 1234,
                           "echo": True}  # fmt: skip
    out = client.completions.create(model=MODEL, prompt=[context + continuation], **ask)
    alone = _alone(client, context + continuation, **ask)[0]
    assert len(out.choices) == 1 and out.choices[0].index == 0
    got = out.choices[0].logprobs
    assert got.token_logprobs == alone.logprobs.token_logprobs
    assert len(got.token_logprobs) == len(context) + len(continuation) + 1
    assert all(lp is not None for lp in got.token_logprobs[len(context) : -1])


def test_two_scoring_prompts_with_max_tokens_0(client: Any) -> None:
    prompts = [[5, 6, 7], [9, 3]]
    out = client.completions.create(model=MODEL, prompt=prompts, max_tokens=0, echo=True,
                                    logprobs=0)  # fmt: skip
    assert [c.text for c in out.choices] == [TOKENIZER.decode(p) for p in prompts]
    assert [len(c.logprobs.tokens) for c in out.choices] == [3, 2]
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (5, 0)


BATCH_ERRORS = [
    ([[1]] * 17, {}, "prompt", "prompt is a list of 17 prompts, over the limit of 16: send "
     "fewer per request"),
    ([[1]] * 3, {"n": 6}, "n", "3 prompts with n 6 are 18 choices, over the limit of 16"),
    (["w1", {"k": 1}], {}, "prompt", "prompt[1]: prompt must be a string or a non-empty list of "
     'token ids, or a list of at most 16 of those, got {"k": 1}'),
    ([[1], [1] * 65], {}, "prompt", "prompt[1]: the prompt is 65 tokens, over the limit of 64 "
     "tokens (--openai-max-prompt-tokens)"),
    ([[1], [2, 70]], {}, "prompt", "prompt[1]: prompt token ids [70] are outside the "
     "target's vocabulary of 64"),
    (["w1", "w2", ""], {}, "prompt", "prompt[2]: the prompt is empty after tokenization"),
    ([[[1]]], {}, "prompt", "prompt[0]: prompt must be a string or a non-empty list of token "
     "ids, or a list of at most 16 of those, got [[1]]"),
]  # fmt: skip


@pytest.mark.parametrize(("prompt", "more", "param", "message"), BATCH_ERRORS)
def test_a_batchs_errors_name_the_prompt(
    api: ApiThread, prompt: Any, more: dict[str, Any], param: str, message: str
) -> None:
    status, error = _error(api, {"model": MODEL, "prompt": prompt, "max_tokens": 2, **more})
    assert (status, error["param"], error["message"]) == (400, param, message)


def test_a_single_prompts_errors_are_worded_as_before(api: ApiThread) -> None:
    status, error = _error(api, {"model": MODEL, "prompt": [2, 70], "max_tokens": 2})
    message = "prompt token ids [70] are outside the target's vocabulary of 64"
    assert (status, error["message"]) == (400, message)
    status, reply, _ = _post(api, "/v1/completions", b'{"model": "tiny", "prompt": ["w1"]}')
    assert status == 200 and len(reply["choices"]) == 1
