"""``edgespec draft --chat``: ``--prompt`` sent as a conversation, a user message (after
``--system``'s, if given) rendered by the tokenizer's chat template exactly as the HTTP
endpoint renders ``/v1/chat/completions`` messages (special-token text in them kept as
text: :mod:`edgespec.runtime.openai_api.chat_prompt`), with the template's own variables
``--chat-template-kwarg`` sets (the endpoint's ``chat_template_kwargs``), the reply ending at
the template's end of turn (:func:`chat_end_ids`), which the text leaves out."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from edgespec.argument_types import utf8_text
from edgespec.errors import UserInputError
from edgespec.runtime.commands.draft_context import ContextBudget
from edgespec.runtime.openai_api.messages import Message

if TYPE_CHECKING:
    from edgespec.runtime.openai_api.chat_prompt import ChatRendering

KWARG_FLAG = "--chat-template-kwarg"


def add_chat_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--chat",
        action="store_true",
        help="send --prompt as a user message through the tokenizer's chat template (as "
        "/v1/chat/completions does); the reply ends at the template's end of turn",
    )
    parser.add_argument(
        "--system",
        metavar="TEXT",
        type=utf8_text,
        help="with --chat or --interactive: a system message first",
    )
    parser.add_argument(
        KWARG_FLAG,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="with --chat or --interactive: a variable of the chat template, as the endpoint's "
        "chat_template_kwargs (Qwen3's enable_thinking=false); VALUE read as JSON (false, 3, "
        '"text", [1, 2]), else as text; repeatable',
    )


def chat_on(args: argparse.Namespace) -> bool:
    """Whether the prompt is a conversation: ``--chat``, or ``--interactive``'s turns."""
    return bool(args.chat or args.interactive)


def check_chat_flags(args: argparse.Namespace) -> None:
    """What ``--chat``, ``--interactive`` and ``--system`` need, refused before anything
    loads."""
    if args.system is not None and not chat_on(args):
        raise UserInputError("--system is a message of --chat: add --chat")
    if args.chat_template_kwarg and not chat_on(args):
        raise UserInputError(f"{KWARG_FLAG} is a variable of --chat's template: add --chat")
    template_rendering(args)  # its mistakes, before anything loads
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


def _variable(given: str) -> tuple[str, Any]:
    """One ``NAME=VALUE`` of :data:`KWARG_FLAG`: VALUE as JSON, else as the text it is."""
    from edgespec.runtime.openai_api.chat_fields import RESERVED, VARIABLE_NAME

    name, equals, value = given.partition("=")
    if not equals:
        raise UserInputError(f"{KWARG_FLAG} {given!r}: give NAME=VALUE")
    if not VARIABLE_NAME.fullmatch(name):
        raise UserInputError(f"{KWARG_FLAG} {given!r}: {name!r} is no template variable name "
                             "(letters, digits and _, not first a digit; at most 64)")  # fmt: skip
    if name in RESERVED:
        raise UserInputError(f"{KWARG_FLAG} {given!r}: {name} is the chat renderer's own "
                             "argument, not a template variable")  # fmt: skip
    try:
        return name, json.loads(value)
    except ValueError:
        return name, value


def template_rendering(args: argparse.Namespace) -> ChatRendering:
    """How ``--chat`` and ``--interactive`` render the conversation: a reply's start last,
    with the variables of :data:`KWARG_FLAG` (each named once)."""
    from edgespec.runtime.openai_api.chat_prompt import ChatRendering

    variables = dict[str, Any]()
    for given in args.chat_template_kwarg:
        name, value = _variable(given)
        if name in variables:
            raise UserInputError(f"{KWARG_FLAG}: {name} is given twice")
        variables[name] = value
    return ChatRendering(template_kwargs=tuple(variables.items()))


def conversation_ids(
    tokenizer: Any, messages: tuple[Message, ...], rendering: ChatRendering
) -> tuple[int, ...]:
    """``messages`` as the endpoint renders a chat request's (a reply's start last)."""
    from edgespec.runtime.openai_api.chat_prompt import chat_ids, special_ids
    from edgespec.runtime.openai_api.errors import ApiError
    from edgespec.runtime.openai_api.prompts import TOKENIZER_LOCK

    if getattr(tokenizer, "chat_template", None) is None:
        raise UserInputError("--chat: the tokenizer has no chat template: drop --chat to send "
                             "the text as it is")  # fmt: skip
    try:
        ids = chat_ids(tokenizer, messages, TOKENIZER_LOCK, special_ids(tokenizer), rendering)
        return tuple(ids)
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
    messages = (*opening(args.system), Message("user", args.prompt))
    ids = conversation_ids(tokenizer, messages, template_rendering(args))
    budget.check_prompt("--prompt", len(ids))
    return ids
