"""``edgespec draft --stop TEXT``: the printed text ends before the first stop sequence, the
generation ends there (its session or stream closed on the server: a round past it at most
committed, not the whole budget), the stats and ``--records`` count the tokens the text
took (the endpoint's ``completion_tokens``), and ``--compare`` finds both modes' cut
outputs identical. Against a loopback server with a tiny target and a word tokenizer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.commands.draft_output import Shown
from edgespec.runtime.wire.inprocess import target_greedy_decode
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.commands.draft_stages import split_stages
from tests.runtime.commands.processes import open_sessions
from tests.word_tokenizer import make_word_tokenizer

PROMPT = (1, 2, 3)
BUDGET = 24


def _expected(target: TransformersTarget) -> tuple[str, str, int]:
    """The stop sequence (the 6th and 7th tokens' words), the text before its first
    occurrence and how many tokens that text took (the last partly in it counts)."""
    words = make_word_tokenizer(64)
    output = list(target_greedy_decode(target, PROMPT, BUDGET))
    full: str = words.decode(output)
    stop: str = words.decode(output[5:7])
    cut = full[: full.find(stop)]
    num = next(n for n in range(BUDGET + 1) if len(words.decode(output[:n])) >= len(cut))
    assert 0 < num < BUDGET - 8, (full, stop)  # the run must end well before the budget
    return stop, cut, num


def _argv(server: ServerThread, stop: str, *flags: str) -> list[str]:
    return ["draft", "--server", f"127.0.0.1:{server.port}", "--draft", "ngram",
            "--prompt-ids", "1,2,3", "--max-new-tokens", str(BUDGET), "--stop", stop,
            "--stop", "never-said", *flags]  # fmt: skip


@pytest.mark.parametrize("mode", ["distributed", "centralized"])
def test_the_text_ends_before_the_stop_and_the_generation_with_it(
    mode: str, server: ServerThread, target: TransformersTarget, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    stop, cut, num = _expected(target)
    records = tmp_path / "records.jsonl"
    assert main(_argv(server, stop, "--mode", mode, "--records", str(records))) == 0
    out = capsys.readouterr()
    assert out.out == cut + "\n"
    assert split_stages(out.err)[1][0].startswith(f"[{mode}: {num} tokens, ")
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    assert rows[-1]["num_output_tokens"] == num
    if mode == "distributed":  # ended at the round that found it: not all 24 committed
        committed = sum(row["num_committed"] for row in rows[:-1])
        assert num <= committed < BUDGET
    assert open_sessions(f"127.0.0.1:{server.port}") == 0


def test_compare_cuts_both_modes_alike(
    server: ServerThread, target: TransformersTarget, capsys: pytest.CaptureFixture[str]
) -> None:
    """Centralized ends at a chunk, distributed at a round (more tokens committed): each
    output cut to its text's tokens, so the two are identical."""
    stop, cut, num = _expected(target)
    assert main(_argv(server, stop, "--compare")) == 0
    out = capsys.readouterr()
    assert out.out == (
        f"centralized (the server decodes alone):\n{cut}\n"
        f"distributed (drafted here, verified by the server):\n{cut}\n"
    )
    lines = split_stages(out.err)[1]
    assert lines[0].startswith(f"[centralized: {num} tokens, ")
    assert lines[1].startswith(f"[distributed: {num} tokens, ")
    assert lines[2].endswith("; outputs identical")


class _Words:
    """A tokenizer whose tokens are the characters of ``ALPHABET`` (id = place)."""

    ALPHABET = "abcdefgh"

    def decode(self, ids: list[int], **kwargs: Any) -> str:
        return "".join(self.ALPHABET[i] for i in ids)


def test_a_stop_split_across_rounds_is_held_back_and_nothing_after_it_shown(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``cd`` arrives as ``c`` in one round and ``d`` in the next: ``c`` is held (it may
    begin the stop), then the text ends before it; a later round shows nothing."""
    shown = Shown(_Words(), ("cd",))
    assert shown.push((0, 1, 2)) is False
    assert capsys.readouterr().out == "ab"
    assert shown.push((3, 4)) is True
    assert shown.push((5,)) is True
    shown.end()
    assert capsys.readouterr().out == "\n"
    assert (shown.stopped, shown.num_text_tokens) == (True, 2)


def test_stop_sequences_without_a_tokenizer_are_refused() -> None:
    with pytest.raises(ValueError, match="stop sequences need a tokenizer"):
        Shown(None, ("x",))


def test_a_stop_within_min_tokens_does_not_count(capsys: pytest.CaptureFixture[str]) -> None:
    """As the endpoint's (vLLM's ``min_tokens``): ``b`` in the first 3 tokens' text is no
    stop; the next ``b`` is, and the text ends before it."""
    shown = Shown(_Words(), ("b",), min_tokens=3)
    assert shown.push((0, 1, 2)) is False
    assert shown.push((3, 1, 4)) is True
    shown.end()
    assert capsys.readouterr().out == "abcd\n"
    assert shown.num_text_tokens == 4
