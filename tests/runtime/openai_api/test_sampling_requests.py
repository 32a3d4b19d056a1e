"""The endpoint's sampling fields end to end with the official ``openai`` client: seeded
sampling, the cuts, ``logit_bias``, the penalties, ``min_tokens``, ``n`` and ``logprobs``,
each against the target's own decoding."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.wire.inprocess import target_greedy_decode
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.greedy_oracles import masked_greedy, penalized_greedy, target_logprobs
from tests.runtime.openai_api.conftest import MODEL, endpoint, openai, word_tokenizer

TOKENIZER = word_tokenizer(64)


def _oracle(target: TransformersTarget, prompt: tuple[int, ...], n: int) -> str:
    return str(TOKENIZER.decode(list(target_greedy_decode(target, prompt, n))))


def test_logit_bias_is_added_to_the_targets_logits(client: Any, api: Any) -> None:
    """``logit_bias`` (was refused unless empty): +100 on one token makes greedy decoding
    take it at every position; bad keys, biases and ids are 400s naming the field."""
    from tests.runtime.openai_api.conftest import _error

    out = client.completions.create(model=MODEL, prompt="w5 w6 w7", max_tokens=6,
                                    logit_bias={"9": 100})  # fmt: skip
    assert out.choices[0].text == TOKENIZER.decode([9] * 6)
    for bias, message in (
        ({"w9": 1}, 'logit_bias keys are token ids, got "w9"'),
        ({"9": 101}, 'logit_bias["9"] must be a number in [-100, 100], got 101'),
        ({"9": True}, 'logit_bias["9"] must be a number in [-100, 100], got true'),
        ({"64": 1}, "logit_bias [64] are outside the target's vocabulary of 64"),
        ({"9": 1, "09": 2}, "logit_bias names a token twice"),
    ):
        status, error = _error(api, {"model": MODEL, "prompt": "w1", "logit_bias": bias})
        assert (status, error["param"], error["message"]) == (400, "logit_bias", message)


def test_seeded_sampling_is_reproducible(client: Any) -> None:
    def sample(seed: int) -> str:
        out = client.completions.create(model=MODEL, prompt="w1 w2", max_tokens=16,
                                        temperature=1.0, top_p=0.9, seed=seed)  # fmt: skip
        return str(out.choices[0].text)

    assert sample(7) == sample(7)
    assert len({sample(s) for s in range(4)}) > 1
    # OpenAI's seeds are int64 (some clients send -1): a negative one, modulo 2**63
    assert sample(-1) == sample(2**63 - 1) and sample(-(2**63)) == sample(0)


@pytest.mark.parametrize("settings", [{"lookup": True}, {"tree": "2,1"}], ids=["lookup", "tree"])
def test_an_endpoint_drafting_tokens_for_certain_samples(
    settings: dict[str, Any],
    grpc_server: ServerThread,
    draft_model: Any,
    target: TransformersTarget,
) -> None:
    """``--lookup`` or ``--tree`` (a sampled request was a 400): their tokens are proposed
    for certain. At top_k 1 only the target's likeliest token can be drawn, so the text is
    its greedy decoding whatever the seed; seeded draws repeat and differ from seed to seed."""
    prompt = "w5 w6 w7 w5 w6 w7 w5 w6"  # repeating: prompt lookup finds its n-grams
    api = endpoint(f"127.0.0.1:{grpc_server.port}", draft_model, TOKENIZER, **settings)
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{api.port}/v1", api_key="unused",
                               max_retries=0, timeout=60)  # fmt: skip

        def sample(seed: int, **cuts: int) -> str:
            out = client.completions.create(
                model=MODEL, prompt=prompt, max_tokens=16, temperature=1.0, seed=seed,
                extra_body=cuts,
            )  # fmt: skip
            return str(out.choices[0].text)

        expected = _oracle(target, tuple(TOKENIZER.encode(prompt)), 16)
        assert sample(1, top_k=1) == sample(2, top_k=1) == expected
        assert sample(7) == sample(7)
        assert len({sample(s) for s in range(4)}) > 1
    finally:
        api.stop()


def test_top_p_0_keeps_only_the_most_likely_token(
    client: Any, api: Any, target: TransformersTarget
) -> None:
    """OpenAI takes top_p in [0, 1]; 0 was a 400 here. Its limit keeps only the most likely
    token: at temperature 1 the tokens are exactly those of temperature 0, the target's
    greedy decoding, whatever the seed; below 0 and above 1 are 400s that say the range."""
    from tests.runtime.openai_api.conftest import _error

    expected = _oracle(target, (1, 2), 16)
    for seed in (1, 2):
        out = client.completions.create(model=MODEL, prompt="w1 w2", max_tokens=16,
                                        temperature=1.0, top_p=0, seed=seed)  # fmt: skip
        assert out.choices[0].text == expected
    greedy = client.completions.create(model=MODEL, prompt="w1 w2", max_tokens=16,
                                       temperature=0)  # fmt: skip
    assert greedy.choices[0].text == expected
    status, error = _error(api, {"model": MODEL, "prompt": "w1", "top_p": -0.1})
    assert (status, error["param"]) == (400, "top_p")
    assert error["message"] == "top_p must be in [0.0, 1.0], got -0.1"


def test_penalties_are_made_on_the_targets_rows(client: Any, target: TransformersTarget) -> None:
    """repetition, frequency and presence penalties (were refused unless off): the text is
    the target's greedy decoding of the penalized rows."""
    expected = TOKENIZER.decode(list(penalized_greedy(target, (1, 2), (1.3, 1.0, 0.5), 16)))
    assert expected != _oracle(target, (1, 2), 16)
    out = client.completions.create(model=MODEL, prompt="w1 w2", max_tokens=16,
                                    frequency_penalty=1.0, presence_penalty=0.5,
                                    extra_body={"repetition_penalty": 1.3})  # fmt: skip
    assert out.choices[0].text == expected


def test_min_tokens_holds_off_stop_sequences_and_stop_tokens(
    client: Any, api: Any, target: TransformersTarget
) -> None:
    """vLLM's ``min_tokens`` (was refused unless 0): a stop sequence counts only where it
    ends in the min_tokens-th token's text or later, and the server commits no stop token
    before then (the target's greedy decoding with it masked in the first rows)."""
    from tests.runtime.openai_api.conftest import _error

    greedy = target_greedy_decode(target, (5, 6, 7), 16)
    full = _oracle(target, (5, 6, 7), 16)
    word = f"w{greedy[1]}"
    after = len(TOKENIZER.decode(list(greedy[:5])))  # the 6th token's text begins here
    assert 0 <= full.find(word) < after  # without min_tokens: cut at the 2nd token
    hit = full.find(word, after - len(word) + 1)
    out = client.completions.create(model=MODEL, prompt="w5 w6 w7", max_tokens=16,
                                    stop=[word], extra_body={"min_tokens": 6})  # fmt: skip
    assert out.choices[0].text == (full if hit < 0 else full[:hit])
    masked = masked_greedy(target, (5, 6, 7), frozenset({greedy[1]}), 6, 16)
    assert masked != greedy  # the masked rows choose otherwise
    held_off = {"min_tokens": 6, "stop_token_ids": [greedy[1]]}
    out = client.completions.create(model=MODEL, prompt="w5 w6 w7", max_tokens=16,
                                    extra_body=held_off)  # fmt: skip
    ended = masked[-1] == greedy[1] and len(masked) < 16
    assert out.choices[0].text == TOKENIZER.decode(list(masked[:-1] if ended else masked))
    status, error = _error(api, {"model": MODEL, "prompt": "w1", "max_tokens": 4, "min_tokens": 5})
    assert (status, error["param"]) == (400, "min_tokens")
    assert error["message"] == "min_tokens must be in [0, max_tokens = 4], got 5"


def test_n_choices_each_as_its_own_request(client: Any, api: Any) -> None:
    """``n`` (was refused unless 1): choice i is what the same request alone gives with seed
    + i, whole or streamed (each choice's chunks tagged with its index, its role first in
    chat, a finish chunk each); usage counts the prompt once and every choice's tokens."""
    from tests.runtime.openai_api.conftest import _error

    def alone(seed: int) -> str:
        out = client.completions.create(model=MODEL, prompt="w1 w2", max_tokens=12,
                                        temperature=1.0, seed=seed)  # fmt: skip
        return str(out.choices[0].text)

    out = client.completions.create(model=MODEL, prompt="w1 w2", max_tokens=12, temperature=1.0,
                                    seed=40, n=3)  # fmt: skip
    texts = [c.text for c in sorted(out.choices, key=lambda c: c.index)]
    assert texts == [alone(40), alone(41), alone(42)] and len(set(texts)) > 1
    assert out.usage.prompt_tokens == 2 and out.usage.completion_tokens == 36
    chat: dict[str, Any] = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "w1 w2"}],
        "max_tokens": 6,
        "temperature": 1.0,
        "seed": 7,
        "n": 2,
    }
    usage = {"include_usage": True}
    chunks = list(client.chat.completions.create(**chat, stream=True, stream_options=usage))
    whole = client.chat.completions.create(**chat)
    for index in (0, 1):
        mine = [c.choices[0] for c in chunks if c.choices and c.choices[0].index == index]
        assert mine[0].delta.role == "assistant"
        assert [c.finish_reason for c in mine][-1] == whole.choices[index].finish_reason
        assert "".join(c.delta.content or "" for c in mine) == whole.choices[index].message.content
    assert chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    for n in (0, 17):
        status, error = _error(api, {"model": MODEL, "prompt": "w1", "n": n})
        assert (status, error["param"], error["message"]) == (
            400,
            "n",
            f"n must be in [1, 16], got {n}",
        )


@pytest.mark.parametrize("chat", [False, True])
def test_a_stream_hands_out_each_tokens_logprobs_once(
    client: Any, target: TransformersTarget, chat: bool
) -> None:
    """Streamed, each delta carries the log-probabilities of the tokens it shows, the whole
    stream's together those of the whole response, in order (a stop sequence cuts both)."""
    ask: dict[str, Any] = {"max_tokens": 12, "temperature": 1.0, "seed": 3, "stop": ["w9"]}
    if chat:
        ask |= {"messages": [{"role": "user", "content": "w5"}], "logprobs": True,
                "top_logprobs": 2}  # fmt: skip
        whole = client.chat.completions.create(model=MODEL, **ask).choices[0]
        parts = [c.choices[0] for c in client.chat.completions.create(model=MODEL, **ask,
                 stream=True) if c.choices]  # fmt: skip
        entries = [e for p in parts if p.logprobs for e in p.logprobs.content]
        assert [e.model_dump() for e in entries] == [
            e.model_dump() for e in whole.logprobs.content]  # fmt: skip
        assert "".join(e.token for e in entries) == whole.message.content
        return
    greedy = target_greedy_decode(target, (5, 6, 7), 12)
    ask = {"max_tokens": 12, "stop": [f"w{greedy[7]}"], "prompt": "w5 w6 w7", "logprobs": 2}
    whole = client.completions.create(model=MODEL, **ask).choices[0]
    assert len(whole.logprobs.tokens) == 7  # cut before the stop sequence
    parts = [c.choices[0] for c in client.completions.create(model=MODEL, **ask, stream=True)]
    shown = [p.logprobs for p in parts if p.logprobs]
    assert len(shown) > 1  # a delta's worth at a time
    for field in ("tokens", "token_logprobs", "top_logprobs", "text_offset"):
        assert [v for s in shown for v in getattr(s, field)] == getattr(whole.logprobs, field)
    assert "".join(p.text for p in parts) == whole.text


def test_logprobs_are_the_targets_own(client: Any, api: Any, target: TransformersTarget) -> None:
    """``logprobs`` (was refused): each returned token's log-probability under the target's
    raw rows and its likeliest alternatives', as OpenAI shapes them on each route; out of
    range, a 400 (with ``echo``: tests/runtime/openai_api/test_echo_logprobs.py)."""
    from tests.runtime.openai_api.conftest import _error

    greedy = target_greedy_decode(target, (5, 6, 7), 8)
    expected = target_logprobs(target, (5, 6, 7), greedy, 2)
    out = client.completions.create(model=MODEL, prompt="w5 w6 w7", max_tokens=8, logprobs=2)
    got = out.choices[0].logprobs
    assert "".join(got.tokens) == out.choices[0].text == _oracle(target, (5, 6, 7), 8)
    assert got.text_offset == [len(TOKENIZER.decode(list(greedy[:i]))) for i in range(8)]
    assert got.token_logprobs == pytest.approx([lp for lp, _ in expected], abs=1e-4)
    for top, (_, want) in zip(got.top_logprobs, expected, strict=True):
        assert list(top) == [TOKENIZER.decode([t]) for t, _ in want]
        assert list(top.values()) == pytest.approx([lp for _, lp in want], abs=1e-4)
    chat = client.chat.completions.create(model=MODEL, messages=[{"role": "user",
                                          "content": "w5"}], max_tokens=4, logprobs=True,
                                          top_logprobs=1)  # fmt: skip
    content = chat.choices[0].logprobs.content
    assert "".join(c.token for c in content) == chat.choices[0].message.content
    assert all(len(c.top_logprobs) == 1 and c.top_logprobs[0].logprob >= c.logprob - 1e-6
               and bytes(c.bytes).decode() == c.token for c in content)  # fmt: skip
    plain = client.completions.create(model=MODEL, prompt="w5 w6 w7", max_tokens=8)
    assert plain.choices[0].logprobs is None
    status, error = _error(api, {"model": MODEL, "prompt": "w1", "logprobs": 21})
    assert (status, error["param"], error["message"]) == (
        400, "logprobs", "logprobs must be an integer in [0, 20], got 21")  # fmt: skip


@pytest.mark.parametrize("cut", [{"top_k": 1}, {"min_p": 1.0}])
def test_a_cut_to_the_likeliest_token_is_greedy(
    client: Any, target: TransformersTarget, cut: dict[str, float]
) -> None:
    """top_k 1 and min_p 1 keep only the most likely token: at temperature 1 the text is the
    target's greedy decoding whatever the seed (the endpoint passes the cuts on to the
    server, which makes them on the target's rows; without them seeds 1..3 sample)."""
    expected = _oracle(target, (1, 2), 16)
    texts = set()
    for seed in (1, 2, 3):
        out = client.completions.create(model=MODEL, prompt="w1 w2", max_tokens=16,
                                        temperature=1.0, seed=seed, extra_body=cut)  # fmt: skip
        texts.add(out.choices[0].text)
    assert texts == {expected}


@pytest.mark.parametrize(
    ("fields", "param", "message"),
    [
        ({"top_k": 1.5}, "top_k", "top_k must be an integer, got 1.5"),
        ({"top_k": -2}, "top_k", "top_k must be -1 or 0 (every token) or a count of tokens "
                                 "below 2**32, got -2"),
        ({"min_p": 1.5}, "min_p", "min_p must be in [0.0, 1.0], got 1.5"),
        ({"top_k": 40}, "top_k", "top_k 40 does nothing at temperature 0 (greedy), this "
         "endpoint's default when a request gives none: give a temperature > 0 to sample "
         "with top_k"),
        ({"min_p": 0.1}, "min_p", "min_p 0.1 does nothing at temperature 0 (greedy), this "
         "endpoint's default when a request gives none: give a temperature > 0 to sample "
         "with min_p"),
    ],
)  # fmt: skip
def test_a_cut_out_of_range_or_without_a_temperature_is_a_400(
    api: Any, fields: dict[str, Any], param: str, message: str
) -> None:
    from tests.runtime.openai_api.conftest import _error

    status, error = _error(api, {"model": MODEL, "prompt": "w1"} | fields)
    assert (status, error["param"], error["message"]) == (400, param, message)
