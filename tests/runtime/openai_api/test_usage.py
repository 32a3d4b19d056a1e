"""``usage.completion_tokens`` counts the tokens of the text returned, and ``finish_reason``
says why it ended, when a round commits several tokens at once: the draft here is the
target itself (every drafted token accepted, 9 per round at γ 8). The target ends its
sequence at the 6th greedy token; the chat template's end of turn is the 3rd:

    greedy after w5 w6 w7:  t1 t2 <end_of_turn> t4 t5 <eos> ...
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from edgespec.config import from_dict
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.openai_api.app import ApiConfig, build_app
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.serve import ApiThread
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.conftest import start_server
from tests.runtime.openai_api.conftest import CHAT_TEMPLATE, LIMITS, MODEL
from tests.word_tokenizer import make_word_tokenizer, word_vocab

PROMPT = (5, 6, 7)


@pytest.fixture(scope="module")
def greedy(target: TransformersTarget) -> tuple[int, ...]:
    tokens = target_greedy_decode(target, PROMPT, 8)
    assert len(set(tokens[:6])) == 6, tokens  # six distinct words: each stop below is unique
    return tuple(tokens)


def _endpoint(target_model: Any, greedy: tuple[int, ...], end_of_turn: bool) -> Iterator[Any]:
    """An endpoint whose target ends at greedy[5]; ``end_of_turn``: its chat template ends
    each turn with <end_of_turn> (greedy[2]), so every reply ends there."""
    target = TransformersTarget(target_model, eos_token_ids=frozenset({greedy[5]}))
    server = start_server(target, host="127.0.0.1")
    address = f"127.0.0.1:{server.port}"
    window = {"name": "static", "params": {"gamma": 8}}
    config = from_dict(DrafterConfig, {"server": address, "draft": "tiny-draft", "window": window})
    # words w0 … w63, but greedy[2] is <end_of_turn> and w{greedy[5]} the tokenizer's EOS;
    # both special (not in the text)
    marker = "{# each turn ends with <end_of_turn> #}" if end_of_turn else ""
    tokenizer = make_word_tokenizer(
        word_vocab(64, {greedy[2]: "<end_of_turn>"}), eos_token=f"w{greedy[5]}",
        special_tokens=["<end_of_turn>"], chat_template=CHAT_TEMPLATE + marker,
    )  # fmt: skip
    setup = EdgeSetup(config, target_model, tokenizer, 64, 24,
                      (RemoteVerifier(address, timeout_s=10.0),))  # fmt: skip
    api = ApiThread(build_app(setup, ApiConfig(MODEL, limits=LIMITS)), "127.0.0.1").start()
    yield openai.OpenAI(base_url=f"http://127.0.0.1:{api.port}/v1", api_key="unused",
                        max_retries=0, timeout=60)  # fmt: skip
    api.stop()
    server.stop(grace_s=0)


@pytest.fixture(scope="module")
def client(target_model: Any, greedy: tuple[int, ...]) -> Iterator[Any]:
    """Its template's end of turn is greedy's 3rd token."""
    yield from _endpoint(target_model, greedy, end_of_turn=True)


@pytest.fixture(scope="module")
def raw_client(target_model: Any, greedy: tuple[int, ...]) -> Iterator[Any]:
    """No end of turn in its template: a reply runs to the EOS, greedy's 6th token."""
    yield from _endpoint(target_model, greedy, end_of_turn=False)


def _complete(client: Any, stream: bool, **fields: Any) -> tuple[str, str, int]:
    """(text, finish_reason, completion_tokens) of a completion of ``w5 w6 w7``."""
    if not stream:
        out = client.completions.create(model=MODEL, prompt="w5 w6 w7", **fields)
        return out.choices[0].text, out.choices[0].finish_reason, out.usage.completion_tokens
    options = {"include_usage": True}
    chunks = list(client.completions.create(model=MODEL, prompt="w5 w6 w7", stream=True,
                                            stream_options=options, **fields))  # fmt: skip
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    finish = [c.choices[0].finish_reason for c in chunks if c.choices][-1]
    return text, finish, chunks[-1].usage.completion_tokens


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_stop_sequence_and_what_follows_are_not_counted(
    client: Any, greedy: tuple[int, ...], stream: bool
) -> None:
    """One round commits t1 … <eos>; a stop at t2 returns t1: one token, not six."""
    stop = f"w{greedy[1]}"
    got = _complete(client, stream, max_tokens=16, stop=[stop])
    assert got == (f"w{greedy[0]}", "stop", 1)


def test_a_token_cut_by_a_stop_sequence_counts(raw_client: Any, greedy: tuple[int, ...]) -> None:
    """The stop begins inside t2's text: part of t2 is returned, so t2 counts."""
    cut = f"w{greedy[1]}"[-1] + f"w{greedy[3]}"  # t2's last character, then t4
    text, finish, tokens = _complete(raw_client, False, max_tokens=16, stop=[cut])
    assert (text, finish, tokens) == (f"w{greedy[0]}" + f"w{greedy[1]}"[:-1], "stop", 2)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_chat_does_not_count_the_end_of_turn_or_after(
    client: Any, greedy: tuple[int, ...], stream: bool
) -> None:
    messages = [{"role": "user", "content": "w5 w6 w7"}]
    if stream:
        chunks = list(client.chat.completions.create(
            model=MODEL, messages=messages, max_tokens=16, stream=True,
            stream_options={"include_usage": True},
        ))  # fmt: skip
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        finish = [c.choices[0].finish_reason for c in chunks if c.choices][-1]
        tokens = chunks[-1].usage.completion_tokens
    else:
        out = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=16)
        text, finish = out.choices[0].message.content, out.choices[0].finish_reason
        tokens = out.usage.completion_tokens
    assert (text, finish, tokens) == (f"w{greedy[0]}w{greedy[1]}", "stop", 2)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_completion_ends_at_the_templates_end_of_turn_as_a_chat_reply(
    client: Any, raw_client: Any, greedy: tuple[int, ...], stream: bool
) -> None:
    """As vLLM ends Gemma 3 at <end_of_turn> (its generation_config's EOS ids) and
    llama.cpp's server at its end-of-generation tokens: the text after it was returned
    (a prompt in the template's turns went on into the next turn's text)."""
    two = f"w{greedy[0]}w{greedy[1]}"
    assert _complete(client, stream, max_tokens=16) == (two, "stop", 2)
    assert _complete(client, stream, max_tokens=3) == (two, "stop", 2)
    assert _complete(raw_client, stream, max_tokens=16)[1:] == ("stop", 6)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_eos_as_the_last_allowed_token_is_a_stop(
    raw_client: Any, greedy: tuple[int, ...], stream: bool
) -> None:
    """The sequence ends at its 6th token: with max_tokens 6 it ended, it was not cut."""
    words = "".join(f"w{t}" for t in (greedy[0], greedy[1], greedy[3], greedy[4]))
    assert _complete(raw_client, stream, max_tokens=6) == (words, "stop", 6)
    assert _complete(raw_client, stream, max_tokens=16) == (words, "stop", 6)
    assert _complete(raw_client, stream, max_tokens=5) == (words, "length", 5)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_ignore_eos_runs_to_max_tokens_past_the_eos(
    client: Any, greedy: tuple[int, ...], stream: bool
) -> None:
    """vLLM's ``ignore_eos`` (a load generator's fixed output lengths; was refused): the
    server commits past its EOS (the 6th token) and, in chat, the end of turn (the 3rd) to
    max_tokens, the text holding what follows (special tokens not shown)."""
    assert len(greedy) == 8  # the target without an EOS
    words = "".join(f"w{t}" for t in greedy if t not in (greedy[2], greedy[5]))
    eos = {"ignore_eos": True}
    assert _complete(client, stream, max_tokens=8, extra_body=eos) == (words, "length", 8)
    assert _complete(client, stream, max_tokens=4, extra_body=eos)[1:] == ("length", 4)
    chat = client.chat.completions.create(
        model=MODEL,
        max_tokens=8,
        extra_body=eos,
        messages=[{"role": "user", "content": "w5 w6 w7"}],
    )
    choice = chat.choices[0]
    assert (choice.message.content, choice.finish_reason) == (words, "length")
    assert chat.usage.completion_tokens == 8
    assert _complete(client, stream, max_tokens=8, extra_body={"ignore_eos": False})[1:] == (
        "stop",
        2,
    )


def _events(client: Any, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON of each event of a stream of ``body`` posted to ``path``, as sent."""
    import urllib.request

    data = json.dumps({"model": MODEL, "stream": True, **body}).encode()
    request = urllib.request.Request(f"{str(client.base_url).rstrip('/')}{path}", data,
                                     {"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=60) as reply:
        lines = [line for line in reply.read().decode().split("\n\n") if line]
    assert lines[-1] == "data: [DONE]"
    return [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]


@pytest.mark.parametrize(
    ("path", "body", "num_tokens"),
    [("/completions", {"prompt": "w5 w6 w7"}, 2),  # t1 t2, then the end of turn
     ("/chat/completions", {"messages": [{"role": "user", "content": "w5 w6 w7"}]}, 2)],
    ids=["completions", "chat"],
)  # fmt: skip
def test_with_include_usage_each_chunk_before_the_last_says_usage_null(
    client: Any, path: str, body: dict[str, Any], num_tokens: int
) -> None:
    """As OpenAI streams; the key was absent before. Without include_usage, no chunk has it."""
    body = {**body, "max_tokens": 4}
    events = _events(client, path, {**body, "stream_options": {"include_usage": True}})
    *chunks, last = events
    assert len(chunks) >= 2 and all(c["usage"] is None and c["choices"] for c in chunks)
    assert (last["choices"], last["usage"]["completion_tokens"]) == ([], num_tokens)
    assert all("usage" not in c for c in _events(client, path, body))
