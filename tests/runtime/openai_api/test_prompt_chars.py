"""A text prompt's characters are bounded before tokenizing by the tokenizer's longest
token (at least 16 a token): a prompt over that could never fit its token limit. With a
flat 16 a token, a whitespace-heavy prompt that fits (Gemma 3 has single tokens of up to 31
tabs or newlines) was refused unread."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.runtime.openai_api.errors import ApiError
from edgespec.runtime.openai_api.messages import CHARS_PER_TOKEN, longest_token_chars
from edgespec.runtime.openai_api.schema import Defaults, Limits, parse_request
from tests.runtime.openai_api.byte_tokenizer import gemma_tokenizer
from tests.runtime.openai_api.conftest import word_tokenizer


class Vocabulary:
    def __init__(self, *entries: str) -> None:
        self._vocab = {entry: index for index, entry in enumerate(entries)}

    def get_vocab(self) -> dict[str, int]:
        return self._vocab


def test_the_bound_is_the_longest_entry_and_never_under_16() -> None:
    assert longest_token_chars(word_tokenizer(64)) == CHARS_PER_TOKEN == 16  # 'w63': 3
    assert longest_token_chars(Vocabulary("a", "\t" * 31, "<0xF0>")) == 31
    assert longest_token_chars(object()) == 16  # lists no vocabulary


def test_gemmas_longest_token_is_31_characters() -> None:
    tokenizer = gemma_tokenizer()
    assert longest_token_chars(tokenizer) == 31
    newlines = "Hi\n" + "\n" * 40_000  # 40,003 characters, 1,293 tokens
    assert len(tokenizer(newlines, add_special_tokens=False)["input_ids"]) <= 2048
    request = _parse({"prompt": newlines}, Limits(chars_per_token=31))
    assert request.prompt == newlines  # was refused: over 16 a token


def _parse(fields: dict[str, Any], limits: Limits, chat: bool = False) -> Any:
    return parse_request({"model": "m", **fields}, chat, Defaults(), limits)


@pytest.mark.parametrize("chat", [False, True], ids=["prompt", "messages"])
def test_the_limit_follows_chars_per_token(chat: bool) -> None:
    limits = Limits(max_prompt_tokens=64, chars_per_token=31)
    fields: Any = (
        {"messages": [{"role": "user", "content": "x" * 64 * 31}]}
        if chat
        else {"prompt": "x" * 64 * 31}
    )
    _parse(fields, limits, chat)  # 1,984 characters: 31 a token of 64
    over = "x" * (64 * 31 + 1)
    fields = {"messages": [{"role": "user", "content": over}]} if chat else {"prompt": over}
    with pytest.raises(ApiError) as refused:
        _parse(fields, limits, chat)
    what = (
        "the messages' content is at least 1985 characters (by messages[0])"
        if chat
        else "the prompt is 1985 characters"
    )
    assert refused.value.message == (
        f"{what}, over the limit of 1984 characters (31 per token of --openai-max-prompt-tokens 64)"
    )


class Captured(Exception):
    def __init__(self, api: Any) -> None:
        super().__init__("the app's config")
        self.api = api


def test_serve_openai_bounds_prompts_by_its_tokenizers_longest_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from types import SimpleNamespace

    from edgespec.runtime.openai_api import serve

    def build_app(setup: Any, api: Any, in_flight: Any) -> Any:
        raise Captured(api)

    monkeypatch.setattr(serve, "_setup", lambda *_: SimpleNamespace(
        max_context_tokens=None, target_name="m", drafts=False, draft_model=None))  # fmt: skip
    monkeypatch.setattr(serve, "build_app", build_app)
    config = SimpleNamespace(max_new_tokens=16, temperature=0.0, slo_class="default")
    tokenizer = Vocabulary("a", " " * 40)
    with pytest.raises(Captured) as captured:
        serve.serve_openai("127.0.0.1:0", config, None, None, tokenizer, 2, Limits())
    assert captured.value.api.limits == Limits(chars_per_token=40)
