"""Chat's ``logprobs.content[].bytes``: what each token stands for, so a character split
over byte tokens (each decoded alone as U+FFFD) is rebuilt from its tokens' bytes, as
OpenAI defines the field: byte-fallback tokens (the tiny tokenizer's, Gemma 3's 262k one's)
and byte-level BPE tokens (GPT-2's scheme), the alternatives in ``top_logprobs`` too."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.core.sampling_params import TokenLogprobs
from edgespec.runtime.openai_api.logprob_fields import ChoiceLogprobs
from tests.runtime.openai_api.byte_tokenizer import byte_level_tokenizer, byte_tokenizer, ids

TEXT = "é€ hi ½𝔘"  # 𝔘: four byte tokens in Gemma's vocabulary too


def _content(tokenizer: Any, token_ids: list[int]) -> list[dict[str, Any]]:
    """Chat's content for ``token_ids``, each token's alternatives itself and the first."""
    values = [TokenLogprobs(-0.5, ((t, -0.5), (token_ids[0], -1.5))) for t in token_ids]
    offsets = [0] * len(token_ids)
    chat = ChoiceLogprobs.build(tokenizer, token_ids, values, offsets).chat_json()
    content: list[dict[str, Any]] = chat["content"]
    return content


@pytest.mark.parametrize("name", ["tiny", "gemma", "byte-level"])
def test_the_tokens_bytes_rebuild_the_text(name: str) -> None:
    if name == "byte-level":  # a token a byte (its encoder takes no text)
        tokenizer, by_bytes = byte_level_tokenizer()
        token_ids = [by_bytes[bytes([b])] for b in TEXT.encode()]
    else:
        tokenizer = byte_tokenizer(name)
        token_ids = ids(tokenizer, TEXT)
    content = _content(tokenizer, token_ids)
    assert any(entry["token"] == "\ufffd" for entry in content)  # split characters
    assert b"".join(bytes(entry["bytes"]) for entry in content) == TEXT.encode()
    for entry in content:  # an alternative that is the token itself: the same bytes
        assert entry["top_logprobs"][0]["bytes"] == entry["bytes"]
        assert entry["top_logprobs"][1]["bytes"] == content[0]["bytes"]


@pytest.mark.parametrize("name", ["tiny", "gemma"])
def test_completions_name_byte_tokens_by_their_bytes(name: str) -> None:
    """``/v1/completions``: a byte token's text is U+FFFD, so its alternatives were one
    ``top_logprobs`` key (the last, least likely value kept); each is OpenAI's
    ``bytes:\\xNN`` now, a whole token's text as before, a repeated key its likeliest."""
    tokenizer = byte_tokenizer(name)
    token_ids = ids(tokenizer, "𝔘 hi")  # 𝔘: four byte tokens (f0 9d 94 98)
    bytes_ids = token_ids[:4]
    values = [TokenLogprobs(-0.25, tuple((a, -1.0 - i) for i, a in enumerate(bytes_ids)))
              for _ in token_ids]  # fmt: skip
    choice = ChoiceLogprobs.build(tokenizer, token_ids, values, [0] * len(token_ids))
    body = choice.completions_json()
    assert body["tokens"][:4] == ["bytes:\\xf0", "bytes:\\x9d", "bytes:\\x94", "bytes:\\x98"]
    assert "".join(body["tokens"][4:]) == " hi"
    assert body["top_logprobs"][0] == {"bytes:\\xf0": -1.0, "bytes:\\x9d": -2.0,
                                       "bytes:\\x94": -3.0, "bytes:\\x98": -4.0}  # fmt: skip
    twice = [TokenLogprobs(-0.25, ((token_ids[-1], -1.0), (token_ids[-1], -2.0)))]
    again = ChoiceLogprobs.build(tokenizer, token_ids[-1:], twice, [0]).completions_json()
    assert list(again["top_logprobs"][0].values()) == [-1.0]
