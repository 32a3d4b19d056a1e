"""``echo`` on ``/v1/completions`` (:class:`PromptEcho`): the prompt's text before the
completion's and, when the request asks for ``logprobs``, its tokens' log-probabilities
before the completion's, as vLLM and OpenAI's legacy completions return them: the first
token's ``null``, each other under the target's row before it, with the same number of
alternatives (``SamplingParams.prompt_logprobs``: the server scores the prompt and returns
them with the session's first reply, :mod:`edgespec.runtime.server.prompt_logprobs`). A
token's offset is where its text starts in the prompt's text decoded; the completion's
tokens' offsets count the echoed text before them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from edgespec.core.sampling_params import TokenLogprobs
from edgespec.runtime.detokenize import IncrementalText, token_bytes
from edgespec.runtime.openai_api.logprob_fields import ChoiceLogprobs
from edgespec.runtime.openai_api.messages import Prompt
from edgespec.runtime.openai_api.prompts import TOKENIZER_LOCK
from edgespec.runtime.openai_api.schema import ParsedRequest

Offsets = Callable[[int, int], list[int]]
"""Where tokens ``start`` .. ``stop - 1`` begin in a text."""


def echo_text(tokenizer: Any, prompt: Prompt, prompt_ids: Sequence[int], scored: bool) -> str:
    """``echo``'s text: the prompt's ids decoded as the completion's text is
    (:class:`IncrementalText`: special tokens such as ``<bos>`` not in it), so the prompt's
    tokens' offsets (:func:`prompt_logprobs`) are in this text; a text prompt as given
    unless ``scored`` (``logprobs`` asked: a tokenizer that decodes its ids otherwise,
    spaces say, put the offsets of its tokens off the given text)."""
    if isinstance(prompt, str) and not scored:
        return prompt
    return _decoded(tokenizer, prompt_ids).text


def _decoded(tokenizer: Any, token_ids: Sequence[int]) -> IncrementalText:
    text = IncrementalText(tokenizer, TOKENIZER_LOCK)
    text.push(token_ids)
    text.finish()
    return text


def prompt_logprobs(
    tokenizer: Any, prompt_ids: Sequence[int], values: Sequence[TokenLogprobs]
) -> ChoiceLogprobs:
    """The prompt's tokens' :class:`ChoiceLogprobs` from the server's ``values`` (one per
    token after the first)."""
    if len(values) != len(prompt_ids) - 1:
        raise RuntimeError(f"the server returned log-probabilities of {len(values)} of the "
                           f"prompt's {len(prompt_ids) - 1} tokens after its first")  # fmt: skip
    text = _decoded(tokenizer, prompt_ids)
    offsets = [text.num_chars_for(i) for i in range(len(prompt_ids))]
    scored = ChoiceLogprobs.build(tokenizer, prompt_ids[1:], values, offsets[1:])
    with TOKENIZER_LOCK:
        first = str(tokenizer.decode([prompt_ids[0]]))
        raw = token_bytes(tokenizer, prompt_ids[0], first)
    return ChoiceLogprobs((first,), (None,), (None,), (0,), (raw,), ((),)).then(scored)


class PromptEcho:
    """A request's echoed prompt: ``text`` (empty without ``echo``), shown through
    ``on_text`` at once, or with ``logprobs`` once the server's first reply brings the
    prompt's (:meth:`take`; :meth:`before_tokens` makes sure it has shown before the
    completion's first text)."""

    def __init__(
        self,
        tokenizer: Any,
        request: ParsedRequest,
        prompt_ids: Sequence[int],
        on_text: Callable[[str, ChoiceLogprobs | None], None],
    ) -> None:
        self.waits = request.echo and request.logprobs is not None
        self.text = (
            echo_text(tokenizer, request.prompt, prompt_ids, self.waits) if request.echo else ""
        )
        self.logprobs: ChoiceLogprobs | None = None
        self._tokenizer, self._prompt_ids, self._on_text = tokenizer, prompt_ids, on_text
        if request.echo and not self.waits:
            on_text(self.text, None)

    def take(self, values: tuple[TokenLogprobs, ...]) -> None:
        """The prompt's log-probabilities arrived: show the text with them."""
        if self.waits:
            self.logprobs = prompt_logprobs(self._tokenizer, self._prompt_ids, values)
            self.waits = False
            self._on_text(self.text, self.logprobs)

    def before_tokens(self) -> None:
        """The completion's first tokens came: a one-token prompt has none to wait for (the
        wire carries no empty list); any other's missing is the server's fault."""
        if self.waits:
            self.take(())

    def offsets(self, completion: Offsets) -> Offsets:
        """The completion's tokens' offsets (``completion``: in its own text) in the choice's."""
        return lambda start, stop: [len(self.text) + o for o in completion(start, stop)]

    def joined(self, completion: ChoiceLogprobs | None) -> ChoiceLogprobs | None:
        """The choice's log-probabilities: the prompt's (when echoed), then ``completion``'s."""
        if self.logprobs is None or completion is None:
            return completion
        return self.logprobs.then(completion)
