"""An echoed token-id prompt's text and its tokens' offsets come from one decoding: special
tokens (Gemma 3's ``<bos>``, which a token-id prompt such as lm-evaluation-harness's
carries) are not in the text, as in the completion's; the echo was decoded with them
(``<bos>Water boils at``) while the offsets skipped them, each 5 characters short."""

from __future__ import annotations

from edgespec.core.sampling_params import TokenLogprobs
from edgespec.runtime.openai_api.prompt_echo import echo_text, prompt_logprobs
from tests.runtime.openai_api.byte_tokenizer import gemma_tokenizer
from tests.word_tokenizer import make_word_tokenizer


def test_a_bos_led_prompts_offsets_are_in_its_echoed_text() -> None:
    tokenizer = gemma_tokenizer()
    prompt = list(tokenizer("Water boils at")["input_ids"])
    assert prompt[0] == tokenizer.bos_token_id and len(prompt) == 4
    text = echo_text(tokenizer, tuple(prompt), prompt, scored=True)
    assert text == "Water boils at"
    values = [TokenLogprobs(-1.0, ()) for _ in prompt[1:]]
    scored = prompt_logprobs(tokenizer, prompt, values)
    assert scored.tokens == ("<bos>", "Water", " boils", " at")
    assert scored.offsets == (0, 0, 5, 11)
    for token, offset in zip(scored.tokens[1:], scored.offsets[1:], strict=True):
        assert text[offset:].startswith(token)


def test_a_text_prompt_echoed_with_logprobs_is_its_ids_decoded() -> None:
    """A tokenizer whose text of the ids is not the prompt as typed (spaces dropped): with
    ``logprobs`` the echo was the prompt as given, ``w5   w6 w7``, and its tokens' offsets
    (0, 2, 4) of ``w5w6w7`` pointed at spaces; without, the prompt as given still."""
    tokenizer = make_word_tokenizer(64)
    given = "w5   w6 w7"
    ids = list(tokenizer(given)["input_ids"])
    assert echo_text(tokenizer, given, ids, scored=False) == given
    text = echo_text(tokenizer, given, ids, scored=True)
    scored = prompt_logprobs(tokenizer, ids, [TokenLogprobs(-1.0, ()) for _ in ids[1:]])
    assert [text[o:].startswith(t) for t, o in zip(scored.tokens, scored.offsets, strict=True)] == [
        True
    ] * len(ids)
