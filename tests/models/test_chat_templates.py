"""models/chat_templates.py: Gemma 3's shipped format rendered turn by turn, which template
wins (the tokenizer's own, then the GGUF metadata's, then the family's), the end-of-turn
tokens a chat reply stops at; and the endpoint's text stream ending a reply there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from edgespec.models.chat_templates import (
    end_of_turn_ids,
    family_template,
    gguf_template,
    with_chat_template,
)
from tests.word_tokenizer import make_word_tokenizer

pytest.importorskip("transformers")


def _tokenizer(extra: tuple[str, ...] = ("<end_of_turn>", "<start_of_turn>")) -> Any:
    words = ["<bos>", "<unk>", "hi", "there", *extra]
    return make_word_tokenizer(words, unk_token="<unk>", bos_token="<bos>", special_tokens=extra)


def test_gemma3_turns_as_google_publishes_them() -> None:
    tokenizer = with_chat_template(_tokenizer(), "gemma3_text")
    messages = [
        {"role": "system", "content": "Be brief. "},
        {"role": "user", "content": " What is 2+2?"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "And 3+3?"},
    ]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text == (
        "<bos><start_of_turn>user\nBe brief.\n\nWhat is 2+2?<end_of_turn>\n"
        "<start_of_turn>model\n4<end_of_turn>\n"
        "<start_of_turn>user\nAnd 3+3?<end_of_turn>\n"
        "<start_of_turn>model\n"
    )


def test_gemma3_refuses_turns_that_do_not_alternate() -> None:
    tokenizer = with_chat_template(_tokenizer(), "gemma3")
    messages = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    with pytest.raises(Exception, match="roles must alternate"):
        tokenizer.apply_chat_template(messages, tokenize=False)


def _gguf(path: Path, template: str | None = None) -> Path:
    """A GGUF of metadata alone, with ``template`` as its chat template if given."""
    gguf = pytest.importorskip("gguf")
    writer = gguf.GGUFWriter(str(path), "gemma3")
    if template is not None:
        writer.add_chat_template(template)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_the_tokenizers_own_then_the_gguf_then_the_family(tmp_path: Path) -> None:
    gguf_file = _gguf(tmp_path / "m.gguf", "{{ 'from the gguf' }}")
    assert gguf_template(gguf_file) == "{{ 'from the gguf' }}"
    own = _tokenizer()
    own.chat_template = "{{ 'its own' }}"
    assert with_chat_template(own, "gemma3", gguf_file).chat_template == "{{ 'its own' }}"
    from_gguf = with_chat_template(_tokenizer(), "gemma3", gguf_file)
    assert from_gguf.chat_template == "{{ 'from the gguf' }}"
    family = with_chat_template(_tokenizer(), "gemma3", _gguf(tmp_path / "n.gguf"))
    assert family.chat_template == family_template("gemma3")
    assert with_chat_template(_tokenizer(), "llama").chat_template is None  # none shipped


def test_end_of_turn_tokens_come_from_the_template() -> None:
    tokenizer = _tokenizer()
    assert end_of_turn_ids(tokenizer) == frozenset()  # no template
    with_chat_template(tokenizer, "gemma3")
    assert end_of_turn_ids(tokenizer) == {tokenizer.convert_tokens_to_ids("<end_of_turn>")}
    plain = with_chat_template(_tokenizer(extra=()), "gemma3")
    assert end_of_turn_ids(plain) == frozenset()  # the marker is no token of this one


def test_a_chat_reply_ends_at_the_end_of_turn_token() -> None:
    from edgespec.runtime.openai_api.text import TextStream

    tokenizer = _tokenizer()
    hi, there, end = (tokenizer.convert_tokens_to_ids(w) for w in ("hi", "there", "<end_of_turn>"))
    stream = TextStream(tokenizer, (), frozenset({end}))
    assert stream.push((hi,)) == "hi"
    assert stream.push((there, end, hi)) == "there"
    assert (stream.stopped, stream.text) == (True, "hithere")
    plain = TextStream(tokenizer, ())
    plain.push((hi, end, there))
    assert (plain.stopped, plain.text) == (False, "hithere")  # completions do not stop there
