"""``edgespec draft --chat``: ``--prompt`` (after ``--system``) rendered by the tokenizer's
chat template as the endpoint renders chat messages (``--chat-template-kwarg``: the
template's own variables, as ``chat_template_kwargs``), the reply ending at the template's end
of turn, which the text, the stats and ``--compare`` leave out (as the endpoint's
``completion_tokens``); ``stop_token_ids`` end the text alike. The flags' mistakes are
refused before anything loads. Against a loopback server with a tiny target and a word
tokenizer whose template marks each turn's end with ``<end_of_turn>``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.wire.inprocess import target_greedy_decode
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.commands.draft_stages import split_stages
from tests.runtime.commands.processes import open_sessions
from tests.word_tokenizer import make_word_tokenizer, word_vocab

BUDGET = 24
TEMPLATE = (
    "{% for m in messages %}{{ m['content'] }} <end_of_turn> {% endfor %}"
    "{% if add_generation_prompt %}{% if greet %}w4 {% else %}w9 {% endif %}{% endif %}"
)
"""Each turn's words and its end; a reply's start ``w9``, or ``w4`` when the template's own
variable ``greet`` is set (``--chat-template-kwarg``)."""


def _chat_ids(end: int, system: bool) -> tuple[int, ...]:
    """The template's rendering of ``--prompt "w5 w6"`` (after ``--system w3``)."""
    return ((3, end) if system else ()) + (5, 6, end, 9)


def _end_of_turn(target: TransformersTarget, size: int) -> tuple[int, list[int]]:
    """An id for ``<end_of_turn>`` that the target's greedy reply (with or without the
    system message) says after a few tokens, and the reply without the system message:
    the tiny target's weights are random, so its end of turn is found, not chosen."""
    for end in range(10, size):
        replies = [
            list(target_greedy_decode(target, _chat_ids(end, s), BUDGET)) for s in (False, True)
        ]
        if all(end in reply[2 : BUDGET - 6] for reply in replies):
            return end, replies[0]
    raise AssertionError("no token the tiny target says early in both replies")


@pytest.fixture(scope="module")
def chat_setup(
    tmp_path_factory: pytest.TempPathFactory, target: TransformersTarget, target_model: Any
) -> tuple[Path, int, list[int]]:
    size = target_model.config.vocab_size
    end, reply = _end_of_turn(target, size)
    directory = tmp_path_factory.mktemp("chat-tokenizer")
    words = word_vocab(size, {end: "<end_of_turn>"})
    make_word_tokenizer(words, special_tokens=["<end_of_turn>"], fuse=False,
                        chat_template=TEMPLATE).save_pretrained(directory)  # fmt: skip
    return directory, end, reply


def _text(ids: list[int]) -> str:
    """The words of ``ids``, as the tokenizer (no decoder: words joined by spaces) says
    them."""
    return " ".join(f"w{t}" for t in ids)


def _argv(server: ServerThread, tokenizer: Path, *flags: str) -> list[str]:
    return ["draft", "--server", f"127.0.0.1:{server.port}", "--draft", "ngram",
            "--tokenizer", str(tokenizer), "--max-new-tokens", str(BUDGET), *flags]  # fmt: skip


@pytest.mark.parametrize("mode", ["distributed", "centralized"])
def test_the_reply_ends_at_the_end_of_turn(
    mode: str, server: ServerThread, chat_setup: tuple[Path, int, list[int]],
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    tokenizer, end, reply = chat_setup
    num = reply.index(end)
    argv = _argv(server, tokenizer, "--chat", "--prompt", "w5 w6", "--mode", mode)
    assert main(argv) == 0
    out = capsys.readouterr()
    assert out.out == _text(reply[:num]) + "\n"
    assert split_stages(out.err)[1][0].startswith(f"[{mode}: {num} tokens, ")
    assert open_sessions(f"127.0.0.1:{server.port}") == 0


def test_a_system_message_comes_first_and_compare_finds_both_modes_alike(
    server: ServerThread, target: TransformersTarget, chat_setup: tuple[Path, int, list[int]],
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    tokenizer, end, _ = chat_setup
    reply = list(target_greedy_decode(target, _chat_ids(end, True), BUDGET))
    text = _text(reply[: reply.index(end)])
    argv = _argv(server, tokenizer, "--chat", "--system", "w3", "--prompt", "w5 w6", "--compare")
    assert main(argv) == 0
    out = capsys.readouterr()
    assert out.out == (
        f"centralized (the server decodes alone):\n{text}\n"
        f"distributed (drafted here, verified by the server):\n{text}\n"
    )
    assert "outputs identical" in out.err


def test_stop_token_ids_end_the_text_before_them(
    server: ServerThread, chat_setup: tuple[Path, int, list[int]],
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Without --chat, the prompt's ids as they are: the same reply, cut at the same id
    (the text showed the stop token's word before, and the stats counted it)."""
    tokenizer, end, reply = chat_setup
    ids = ",".join(str(t) for t in _chat_ids(end, False))
    argv = _argv(server, tokenizer, "--prompt-ids", ids, "--set", f"stop_token_ids=[{end}]")
    assert main(argv) == 0
    out = capsys.readouterr()
    assert out.out == _text(reply[: reply.index(end)]) + "\n"
    assert split_stages(out.err)[1][0].startswith(f"[distributed: {reply.index(end)} tokens, ")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--prompt", "w5", "--system", "w3"], "--system is a message of --chat: add --chat"),
        (["--prompt-ids", "5,6", "--chat"],
         "--chat renders the --prompt text: give --prompt, not --prompt-ids"),
        (["--serve-openai", "127.0.0.1:0", "--chat"],
         "--chat: --serve-openai's requests carry their own messages (/v1/chat/completions): "
         "drop --chat"),
        (["--interactive", "--compare"],
         "--interactive: --compare is for one prompt: drop --compare"),
        (["--interactive", "--records", "r.jsonl"],
         "--interactive: --records is for one prompt: drop --records"),
        (["--prompt", "w5", "--chat-template-kwarg", "greet=true"],
         "--chat-template-kwarg is a variable of --chat's template: add --chat"),
        (["--chat", "--prompt", "w5", "--chat-template-kwarg", "greet"],
         "--chat-template-kwarg 'greet': give NAME=VALUE"),
        (["--interactive", "--chat-template-kwarg", "9x=1"],
         "--chat-template-kwarg '9x=1': '9x' is no template variable name (letters, digits "
         "and _, not first a digit; at most 64)"),
        (["--chat", "--prompt", "w5", "--chat-template-kwarg", "add_generation_prompt=false"],
         "--chat-template-kwarg 'add_generation_prompt=false': add_generation_prompt is the "
         "chat renderer's own argument, not a template variable"),
        (["--chat", "--prompt", "w5", "--chat-template-kwarg", "greet=1",
          "--chat-template-kwarg", "greet=2"], "--chat-template-kwarg: greet is given twice"),
    ],
)  # fmt: skip
def test_chat_flag_mistakes_exit_2_before_the_server_is_reached(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["draft", "--server", "127.0.0.1:9", "--draft", "ngram", *flags]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == f"edgespec draft: {message}"


@pytest.mark.parametrize(("given", "greets"), [("greet=true", True), ("greet=false", False),
                                               ("greet=no", True)])  # fmt: skip
def test_a_template_variable_is_read_as_json_else_as_text(
    given: str, greets: bool, server: ServerThread, target: TransformersTarget,
    chat_setup: tuple[Path, int, list[int]], capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """``--chat-template-kwarg greet=VALUE`` sets the template's ``greet``: ``false`` is JSON's
    false (``w9``), ``no`` no JSON, so the text "no" (set: ``w4``); the reply is target-only
    decoding's of the prompt so rendered."""
    tokenizer, end, reply = chat_setup
    greeted = _cut(list(target_greedy_decode(target, (5, 6, end, 4), BUDGET)), end)
    assert greeted != _cut(reply, end)  # the variable changes the reply: the test is live
    argv = _argv(server, tokenizer, "--chat", "--prompt", "w5 w6", "--chat-template-kwarg", given)
    assert main(argv) == 0
    assert capsys.readouterr().out == _text(greeted if greets else _cut(reply, end)) + "\n"


def test_a_tokenizer_without_a_chat_template_is_named(
    server: ServerThread, model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_argv(server, model_dir, "--chat", "--prompt", "w5")) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "edgespec draft: --chat: the tokenizer has no chat template: drop --chat to send the "
        "text as it is"
    )


def _cut(reply: list[int], end: int) -> list[int]:
    return reply[: reply.index(end)] if end in reply else reply


@pytest.mark.parametrize("mode", ["distributed", "centralized"])
def test_interactive_turns_carry_the_conversation(
    mode: str, server: ServerThread, target: TransformersTarget,
    chat_setup: tuple[Path, int, list[int]], monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Each line a user turn (a blank one skipped), generated on the whole conversation
    rendered by the template: the second turn's prompt holds the first reply's words as
    the assistant's turn. Each reply, token-identical to target-only decoding of that
    prompt, ends at the end of turn; end of input ends the run, exit 0."""
    import io

    tokenizer, end, reply = chat_setup
    first = _cut(reply, end)
    second_prompt = (5, 6, end, *first, end, 7, end, 9)
    second = _cut(list(target_greedy_decode(target, second_prompt, BUDGET)), end)
    monkeypatch.setattr("sys.stdin", io.StringIO("w5 w6\n\n  \nw7\n"))
    assert main(_argv(server, tokenizer, "--interactive", "--mode", mode)) == 0
    out = capsys.readouterr()
    assert out.out == f"{_text(first)}\n{_text(second)}\n"
    stats = split_stages(out.err)[1]
    assert [line.split(",")[0] for line in stats] == [
        f"[{mode}: {len(first)} tokens", f"[{mode}: {len(second)} tokens",
    ]  # fmt: skip
    assert open_sessions(f"127.0.0.1:{server.port}") == 0


def test_interactive_turns_are_rendered_with_the_template_variables(
    server: ServerThread, target: TransformersTarget, chat_setup: tuple[Path, int, list[int]],
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Each turn's prompt ends at the reply's start as ``greet`` renders it (``w4``)."""
    import io

    tokenizer, end, _ = chat_setup
    first = _cut(list(target_greedy_decode(target, (5, 6, end, 4), BUDGET)), end)
    second_prompt = (5, 6, end, *first, end, 7, end, 4)
    second = _cut(list(target_greedy_decode(target, second_prompt, BUDGET)), end)
    monkeypatch.setattr("sys.stdin", io.StringIO("w5 w6\nw7\n"))
    argv = _argv(server, tokenizer, "--interactive", "--chat-template-kwarg", "greet=true")
    assert main(argv) == 0
    assert capsys.readouterr().out == f"{_text(first)}\n{_text(second)}\n"


def test_a_conversation_past_the_context_is_refused_in_one_line(
    server: ServerThread, chat_setup: tuple[Path, int, list[int]],
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    import io

    tokenizer, _, _ = chat_setup
    monkeypatch.setattr("sys.stdin", io.StringIO("w5\n" + " ".join(["w5"] * 5000) + "\n"))
    assert main(_argv(server, tokenizer, "--interactive")) == 2  # after the first turn
    out = capsys.readouterr()
    assert len(out.out.splitlines()) == 1
    turns = 2 + len(out.out.split()) + 1 + 5001 + 1  # w5 <eot>, the reply <eot>, ... w9
    assert out.err.splitlines()[-1] == (
        f"edgespec draft: --interactive: the conversation ({turns:,} tokens) + --max-new-tokens "
        "(24) exceeds the target's context of 4,096 tokens"
    )
    assert open_sessions(f"127.0.0.1:{server.port}") == 0


class _Terminal:
    """Lines as a terminal gives them (``isatty``)."""

    def __init__(self, text: str) -> None:
        import io

        self._lines = io.StringIO(text)

    def isatty(self) -> bool:
        return True

    def readline(self) -> str:
        return self._lines.readline()


def test_a_terminal_is_asked_for_each_turn_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    from edgespec.runtime.commands.draft_conversation import turns

    assert list(turns(_Terminal("hi\n\nthere"))) == ["hi", "there"]
    assert capsys.readouterr() == ("", "> > > > ")  # stdout carries only the replies
