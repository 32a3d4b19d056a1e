"""``edgespec draft``'s printed text of outputs written in byte tokens (a tiny byte-fallback
tokenizer and Gemma 3 270M's own): the text of the whole output, complete characters only,
each printed once a later token completes it, an unfinished last one as one U+FFFD,
special tokens skipped, as the HTTP endpoint returns it; centralized and distributed alike.
It printed each round decoded alone: every byte token's character as U+FFFD."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from edgespec.config import from_dict
from edgespec.policies.window import StaticWindow
from edgespec.runtime.commands.draft_run import DraftRun
from edgespec.runtime.edge import drafter
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.messages import SessionSpec
from tests.runtime.openai_api.byte_tokenizer import EOS, byte_tokenizer, ids

GOOSE = "🪿"


@pytest.fixture(params=["tiny", "gemma"])
def tokenizer(request: pytest.FixtureRequest) -> Any:
    return byte_tokenizer(request.param)


class Printed:
    """What stdout shows after each round, and at the end."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys
        self.after_rounds: list[str] = []

    def rounds(self, chunks: list[list[int]]) -> Iterator[tuple[int, ...]]:
        for chunk in chunks:
            yield tuple(chunk)
            self.after_rounds.append(self.capsys.readouterr().out)  # the round was shown

    def end(self) -> str:
        return self.capsys.readouterr().out


def _centralized(tokenizer: Any, chunks: list[list[int]], printed: Printed) -> None:
    class Server:
        def generate(
            self, spec: SessionSpec, fused: bool, gamma: int, *callbacks: Any
        ) -> Iterator[Any]:
            return printed.rounds(chunks)

    config = from_dict(DrafterConfig, {"server": "127.0.0.1:1"})
    outcome = DraftRun(config, Server(), (1, 2), tokenizer, None).server_side(fused=False)
    assert outcome.output == tuple(t for chunk in chunks for t in chunk)


def _distributed(tokenizer: Any, chunks: list[list[int]], printed: Printed) -> None:
    """The rounds committed as ``generate`` calls back with them (the drafting loop's own
    tests: tests/runtime/edge)."""

    def generate(*args: Any, **kwargs: Any) -> Any:
        on_tokens: Callable[[tuple[int, ...]], None] = args[6]
        output: list[int] = []
        for chunk in printed.rounds(chunks):
            on_tokens(chunk)
            output.extend(chunk)
        return SimpleNamespace(output_token_ids=tuple(output), request=None, rounds=(),
                               semantic=None)  # fmt: skip

    config = from_dict(DrafterConfig, {"server": "127.0.0.1:1", "draft": "ngram"})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(drafter, "generate", generate)
        outcome = DraftRun(config, None, (1, 2), tokenizer, None).distributed(
            None, 64, StaticWindow(4), None, False
        )
    assert outcome.output == tuple(t for chunk in chunks for t in chunk)


@pytest.mark.parametrize("run", [_centralized, _distributed])
def test_characters_print_once_complete_and_a_cut_one_as_one_replacement(
    tokenizer: Any, run: Callable[..., None], capsys: pytest.CaptureFixture[str]
) -> None:
    """Two geese and 3 bytes of a third, in rounds of 5, 4 and 2 tokens."""
    tokens = ids(tokenizer, GOOSE * 3)[:11]
    printed = Printed(capsys)
    run(tokenizer, [tokens[:5], tokens[5:9], tokens[9:]], printed)
    assert printed.after_rounds == [GOOSE, GOOSE, ""]  # was 5, 4 and 2 × U+FFFD
    assert printed.end() == "\ufffd\n"


@pytest.mark.parametrize("run", [_centralized, _distributed])
def test_the_printed_text_is_the_whole_output_decoded_without_special_tokens(
    tokenizer: Any, run: Callable[..., None], capsys: pytest.CaptureFixture[str]
) -> None:
    tokens = [*ids(tokenizer, "𠀂𠀃𠀄 hi 𠀀 a"), tokenizer.convert_tokens_to_ids(EOS)]
    printed = Printed(capsys)
    run(tokenizer, [tokens[i : i + 3] for i in range(0, len(tokens), 3)], printed)
    whole = tokenizer.decode(tokens, skip_special_tokens=True)
    assert whole == "𠀂𠀃𠀄 hi 𠀀 a"
    assert "".join(printed.after_rounds) + printed.end() == whole + "\n"  # was <eos> too
