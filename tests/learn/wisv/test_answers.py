"""GSM8K answer extraction and the stopping rule of WISV's base labels."""

from __future__ import annotations

import pytest

from edgespec.learn.wisv.answers import (
    GSM8K_FRAME,
    answer_finished,
    extract_answer,
    framed_prompt,
    normalise_number,
)


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        (" He has 3 * 4 = 12 apples.\n#### 12\n\n", "12"),
        (" 2 + 3 = 5, then 5 * 2 = 10.\n#### $1,000.00 dollars\n", "1000"),
        (" 7 - 9 = -2\n#### -2\n", "-2"),
        (" The total is 4.50 dollars.", "4.5"),  # no ####: the last number
        (" 10 + 8 = 18 books.\nQuestion: Tom has 3 apples and 4 pears", "18"),  # cut
        (" #### 30\nQuestion: 5 birds\n#### 5\n", "30"),
        (" 1000\nQuestion: how many", "1000"),
        (" no number here\n", None),
        (" ####\nQuestion: 12", None),  # a mark with no number before the next turn
        ("", None),
    ],
)
def test_extract_answer(text: str, answer: str | None) -> None:
    assert extract_answer(text) == answer


@pytest.mark.parametrize(
    ("text", "finished"),
    [
        (" 3 * 4 = 12.\n#### 12\n", True),
        (" 3 * 4 = 12.\n#### 12", False),  # the number may still grow
        (" 3 * 4 = 12.\n####", False),
        (" 3 * 4 = 12 apples.\n\nQuestion:", True),
        ("Question: the output's own start does not count", False),
        (" #### $40 in all\n", True),
    ],
)
def test_answer_finished(text: str, finished: bool) -> None:
    assert answer_finished(text) is finished


def test_numbers_are_normalised() -> None:
    assert normalise_number("1,234") == "1234"
    assert normalise_number("0.50") == "0.5"
    assert normalise_number("12.000") == "12"
    assert normalise_number("abc") is None
    long = "1" * 40 + ".000"  # beyond decimal's 28-digit context
    assert normalise_number(long) == "1" * 40
    assert normalise_number("-0.0") == "0"


def test_the_frame_ends_each_example_with_its_answer_line() -> None:
    assert framed_prompt("Question: q?\nAnswer:") == GSM8K_FRAME + "Question: q?\nAnswer:"
    examples = GSM8K_FRAME.strip().split("\n\n")
    assert [extract_answer(e.split("Answer:")[1]) for e in examples] == ["10", "37"]
