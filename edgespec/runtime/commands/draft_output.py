"""``edgespec draft``'s output as it streams (:class:`Shown`): the committed text or token
ids on stdout, and the notices of a generation's retries on stderr, each on a line of its
own; ``--logprobs``' lines after the text (:func:`logprob_lines`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from edgespec.core.sampling_params import TokenLogprobs
from edgespec.runtime.errors import RequestError
from edgespec.runtime.openai_api.text import TextStream

CAUSE_CHARS = 200
"""The most characters of an error a reconnect or resend line quotes."""


def cause(error: RequestError) -> str:
    """``error`` as a reconnect or resend line quotes it: whole up to :data:`CAUSE_CHARS`,
    else cut at the last word that fits, an ellipsis marking the cut (gRPC's messages end
    with what failed: ``... Connection refused``)."""
    text = str(error)
    if len(text) <= CAUSE_CHARS:
        return text
    space = text.rfind(" ", 0, CAUSE_CHARS)
    return text[: space if space > 0 else CAUSE_CHARS - 1].rstrip(" ;:,") + " …"


class Shown:
    """An output on stdout as it streams: with a tokenizer its text as the HTTP endpoint
    returns it (complete characters only: :mod:`edgespec.runtime.detokenize`), else its
    token ids. ``stops`` (``--stop``; a tokenizer's text only) and ``stop_token_ids`` (the
    config's, ``--chat``'s end of turn): the text is cut before the first of them (what
    may begin a stop sequence is held back; one ending in the first ``min_tokens``
    tokens' text does not count, as the endpoint's), ``stopped`` set, and whatever comes
    after is not shown; :meth:`push` returns ``stopped``, so a generation ends there.
    ``end`` writes the text held (an unfinished character's U+FFFD) and ends the line;
    ``num_text_tokens`` is then how many tokens the text took (the endpoint's
    ``completion_tokens``). Used as a context manager: an output cut short (a lost
    server, Ctrl-C) ends its line as the block is left, so the error or stop line on
    stderr starts its own (it followed the last token on the terminal: ``28edgespec
    draft: UNAVAILABLE ...``)."""

    __slots__ = ("_mid_line", "_resent_at", "_text")

    def __init__(
        self,
        tokenizer: Any,
        stops: tuple[str, ...] = (),
        min_tokens: int = 0,
        stop_token_ids: frozenset[int] = frozenset(),
    ) -> None:
        if stops and tokenizer is None:
            raise ValueError("stop sequences need a tokenizer: token ids have no text")
        self._text = (
            None
            if tokenizer is None
            else TextStream(tokenizer, stops, stop_token_ids, min_tokens=min_tokens)
        )
        self._mid_line = False
        self._resent_at: int | None = None  # the tokens committed at the last resend said

    @property
    def stopped(self) -> bool:
        """Whether the text reached a stop sequence."""
        return self._text is not None and self._text.stopped

    @property
    def num_text_tokens(self) -> int | None:
        """The tokens the text took (a stop sequence's not counted); ``None``: no text."""
        return None if self._text is None else self._text.num_tokens

    def push(self, tokens: tuple[int, ...]) -> bool:
        if self.stopped:
            return True
        text = f"{list(tokens)} " if self._text is None else self._text.push(tokens)
        sys.stdout.write(text)
        sys.stdout.flush()
        self._resent_at = None
        if text:
            self._mid_line = not text.endswith("\n")
        return self.stopped

    def end(self) -> None:
        held = "" if self._text is None or self.stopped else self._text.finish()
        sys.stdout.write(held + "\n")
        sys.stdout.flush()
        self._mid_line = False

    def notice(self, line: str) -> None:
        """``line`` on stderr, on a line of its own on a terminal (after a newline of its
        own when the output is mid-line there; stdout's text is left as it is)."""
        lead = "\n" if self._mid_line and sys.stdout.isatty() else ""
        print(f"{lead}{line}", file=sys.stderr, flush=True)

    def reconnecting(self, error: RequestError, num_committed: int, retry_s: float) -> None:
        """Say that a lost session is reopened (the generation would otherwise be silent
        for up to ``--retry-timeout-s``): what lost it, what is kept, for how long."""
        self.notice(
            f"edgespec draft: the session was lost ({cause(error)}) after "
            f"{num_committed} tokens: reopening it with them, retried for up to {retry_s:g} s "
            "(--retry-timeout-s)"
        )

    def resending(self, error: RequestError, num_committed: int, left_s: float) -> None:
        """Say that a verification past its deadline is sent again (the generation would
        otherwise be silent for another ``--request-timeout-s``): in full the first time,
        then one short line a resend until a token comes."""
        left = f"for up to {max(left_s, 0.0):.0f} s more (--progress-timeout-s)"
        if self._resent_at == num_committed:
            self.notice(f"edgespec draft: still no answer: sending it again, {left}")
            return
        self._resent_at = num_committed
        self.notice(
            f"edgespec draft: no answer within the call's deadline ({cause(error)}; "
            f"--request-timeout-s) after {num_committed} tokens: the server is busy, with a "
            "long prompt's first pass, say; sending the same block again on the same session "
            f"(the server keeps its work), {left}"
        )

    def __enter__(self) -> Shown:
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if kind is not None and self._mid_line:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self._mid_line = False


def logprob_lines(
    output: Sequence[int], logprobs: Sequence[TokenLogprobs], tokenizer: Any
) -> list[str]:
    """``--logprobs``: a line per output token, its text (its id decoded alone, quoted; the
    id without a tokenizer), its log-probability under the target, then its likeliest
    tokens' (``logprobs: token, log-probability, likeliest`` first)."""

    def name(token: int) -> str:
        return str(token) if tokenizer is None else repr(tokenizer.decode([token]))

    lines = ["logprobs: token, log-probability under the target, the likeliest tokens'"]
    for token, row in zip(output, logprobs, strict=False):
        top = ", ".join(f"{name(t)} {lp:.4f}" for t, lp in row.top)
        lines.append(f"  {name(token)} {row.logprob:.4f}" + (f"  | {top}" if top else ""))
    return lines
