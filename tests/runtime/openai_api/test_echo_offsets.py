"""An echoed token-id prompt's text and its tokens' offsets come from one decoding: special
tokens (Gemma 3's ``<bos>``, which a token-id prompt such as lm-evaluation-harness's
carries) are not in the text, as in the completion's; the echo was decoded with them
(``<bos>Water boils at``) while the offsets skipped them, each 5 characters short."""

from __future__ import annotations

from edgespec.core.sampling_params import TokenLogprobs
from edgespec.runtime.openai_api.prompt_echo import echo_text, prompt_logprobs
from tests.runtime.openai_api.byte_tokenizer import gemma_tokenizer


def test_a_bos_led_prompts_offsets_are_in_its_echoed_text() -> None:
    tokenizer = gemma_tokenizer()
    prompt = list(tokenizer("Water boils at")["input_ids"])
    assert prompt[0] == tokenizer.bos_token_id and len(prompt) == 4
    text = echo_text(tokenizer, tuple(prompt))
    assert text == "Water boils at"
    values = [TokenLogprobs(-1.0, ()) for _ in prompt[1:]]
    scored = prompt_logprobs(tokenizer, prompt, values)
    assert scored.tokens == ("<bos>", "Water", " boils", " at")
    assert scored.offsets == (0, 0, 5, 11)
    for token, offset in zip(scored.tokens[1:], scored.offsets[1:], strict=True):
        assert text[offset:].startswith(token)
