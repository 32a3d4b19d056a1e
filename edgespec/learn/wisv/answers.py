"""GSM8K outcomes for WISV's base labels: the prompt frame, when an output is finished, and
its final numeric answer.

**Frame.** Gemma 3 270M is a base model. Under the project's plain GSM8K template
(``Question: … Answer:``) it writes a bare number and then repeats the question. Almost
every mismatch then falls after the answer and none can change it. The dataset
therefore frames each GSM8K prompt with :data:`GSM8K_FRAME`: two short worked examples
written for edgespec (not from GSM8K), each a line of arithmetic and then ``#### N``.
After the frame the target writes one or two sentences of arithmetic and ``#### N``
(20–40 tokens on the first train prompts).

**Finished** (:func:`answer_finished`): the decoded output holds ``####``, then a number,
then a line break (the answer line is complete), or the frame's next turn has begun
(``Question:`` after the start). Decoding also stops at EOS or at ``max_new_tokens``.

**Answer** (:func:`extract_answer`): the output is cut where the next ``Question:``
begins. If the rest holds ``####``, the answer is the first number after the first
``####``; otherwise it is the last number in the rest. A number is an optional minus
sign, then digits with optional thousands commas and an optional decimal part. It is
normalised by dropping commas and trailing zeros of the decimal part, so
``1,000.00`` → ``1000``. No number gives ``None``, and two ``None`` outcomes are equal.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

GSM8K_FRAME = (
    "Question: Tom has 3 boxes with 4 apples in each box. He eats 2 of the apples. "
    "How many apples are left?\n"
    "Answer: Tom has 3 * 4 = 12 apples. After eating 2 he has 12 - 2 = 10 apples.\n"
    "#### 10\n\n"
    "Question: A shirt costs $15 and a hat costs $7. How much do 2 shirts and 1 hat cost?\n"
    "Answer: Two shirts cost 2 * 15 = 30 dollars. Adding the hat gives 30 + 7 = 37 dollars.\n"
    "#### 37\n\n"
)
"""Put in front of each ``Question: … Answer:`` prompt (module docstring)."""

NEXT_TURN = "Question:"
ANSWER_MARK = "####"
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
_FINISHED_LINE = re.compile(r"####[^\S\n]*\$?-?\d[\d,]*(?:\.\d+)?[^\n]*\n")


def framed_prompt(text: str) -> str:
    """A formatted GSM8K prompt (``Question: … Answer:``) with the frame in front."""
    return GSM8K_FRAME + text


def _cut(text: str) -> str:
    at = text.find(NEXT_TURN, 1)
    return text if at < 0 else text[:at]


def answer_finished(text: str) -> bool:
    """Whether a (partial) output's answer can no longer change (module docstring)."""
    return text.find(NEXT_TURN, 1) >= 0 or _FINISHED_LINE.search(text) is not None


def normalise_number(raw: str) -> str | None:
    """``1,000.50`` → ``1000.5``; ``None`` when ``raw`` is no number."""
    try:
        value = Decimal(raw.replace(",", ""))
    except InvalidOperation:
        return None
    if value == value.to_integral_value():
        return str(int(value))  # any length (quantize fails past 28 digits)
    return format(value.normalize(), "f")


def extract_answer(text: str) -> str | None:
    """The final numeric answer of an output (module docstring), normalised."""
    body = _cut(text)
    mark = body.find(ANSWER_MARK)
    if mark >= 0:
        found = _NUMBER.search(body, mark + len(ANSWER_MARK))
        return normalise_number(found.group()) if found else None
    numbers = _NUMBER.findall(body)
    return normalise_number(numbers[-1]) if numbers else None
