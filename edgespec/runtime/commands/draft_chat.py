"""``edgespec draft --chat``: ``--prompt`` sent as a conversation, a user message (after
``--system``'s, if given) rendered by the tokenizer's chat template exactly as the HTTP
endpoint renders ``/v1/chat/completions`` messages (special-token text in them kept as
text: :mod:`edgespec.runtime.openai_api.chat_prompt`), the reply ending at the template's
end of turn (:func:`chat_end_ids`), which the text leaves out."""

from __future__ import annotations

import argparse
from typing import Any

from edgespec.errors import UserInputError
from edgespec.runtime.commands.draft_context import ContextBudget
from edgespec.runtime.openai_api.messages import Message


def add_chat_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--chat",
        action="store_true",
        help="send --prompt as a user message through the tokenizer's chat template (as "
        "/v1/chat/completions does); the reply ends at the template's end of turn",
    )
    parser.add_argument(
        "--system", metavar="TEXT", help="with --chat or --interactive: a system message first"
    )


def chat_on(args: argparse.Namespace) -> bool:
    """Whether the prompt is a conversation: ``--chat``, or ``--interactive``'s turns."""
    return bool(args.chat or args.interactive)


def check_chat_flags(args: argparse.Namespace) -> None:
    """What ``--chat``, ``--interactive`` and ``--system`` need, refused before anything
    loads."""
    if args.system is not None and not chat_on(args):
        raise UserInputError("--system is a message of --chat: add --chat")
    if args.interactive:
        for flag, given in (("--compare", args.compare), ("--records", args.records)):
            if given:
                raise UserInputError(f"--interactive: {flag} is for one prompt: drop {flag}")
    if not args.chat:
        return
    if args.serve_openai is not None:
        raise UserInputError("--chat: --serve-openai's requests carry their own messages "
                             "(/v1/chat/completions): drop --chat")  # fmt: skip
    if args.prompt_ids is not None:
        raise UserInputError("--chat renders the --prompt text: give --prompt, not --prompt-ids")


def conversation_ids(tokenizer: Any, messages: tuple[Message, ...]) -> tuple[int, ...]:
    """``messages`` as the endpoint renders a chat request's (a reply's start last)."""
    from edgespec.runtime.openai_api.chat_prompt import chat_ids, special_ids
    from edgespec.runtime.openai_api.errors import ApiError
    from edgespec.runtime.openai_api.prompts import TOKENIZER_LOCK

    if getattr(tokenizer, "chat_template", None) is None:
        raise UserInputError("--chat: the tokenizer has no chat template: drop --chat to send "
                             "the text as it is")  # fmt: skip
    try:
        return tuple(chat_ids(tokenizer, messages, TOKENIZER_LOCK, special_ids(tokenizer)))
    except ApiError as exc:
        raise UserInputError(f"--chat: {exc.message}") from None


def opening(system: str | None) -> tuple[Message, ...]:
    """The conversation before its first user turn: ``--system``'s message, if given."""
    return () if system is None else (Message("system", system),)


def chat_end_ids(tokenizer: Any, ignore_eos: bool) -> frozenset[int]:
    """The template's end-of-turn tokens, where the reply ends (none with ``ignore_eos``,
    which runs to ``max_new_tokens`` as the endpoint's does)."""
    from edgespec.models.chat_templates import end_of_turn_ids

    return frozenset() if ignore_eos else end_of_turn_ids(tokenizer)


def prompt_text_ids(
    budget: ContextBudget, tokenizer: Any, args: argparse.Namespace
) -> tuple[int, ...]:
    """``--prompt``'s ids (``--chat``: as a conversation), checked with ``max_new_tokens``;
    none for ``--interactive``, whose turns are read later."""
    if args.interactive:
        return ()
    if not args.chat:
        return budget.tokenized(tokenizer, args.prompt)
    ids = conversation_ids(tokenizer, (*opening(args.system), Message("user", args.prompt)))
    budget.check_prompt("--prompt", len(ids))
    return ids
