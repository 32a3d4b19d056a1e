"""A ``return_hidden`` session's token tree on a backend that returns no hidden states of
trees (llama.cpp) is refused at admission, naming ``draft_parents``: it passed, and the
backend's pass raised for the whole batch, so every other session in it lost its batched
pass (run again one by one) and the call ended ``INTERNAL``."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.llamacpp_backend import TREE_HIDDEN, LlamaCppTarget
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall
from edgespec.runtime.server.engine_checks import check_verify_call
from edgespec.runtime.server.verification import EXACT_RULES

PROMPT = (1, 2, 3)


@dataclass(frozen=True)
class Backend:
    """What admission reads of a backend; ``tree_hidden_problem`` as llama.cpp's."""

    vocab_size: int = 64
    max_context_tokens: int = 128
    tree_hidden_problem: str | None = LlamaCppTarget.tree_hidden_problem


def _check(backend: Backend, return_hidden: bool, parents: tuple[int, ...] | None) -> None:
    spec = SessionSpec("s", "c", PROMPT, SamplingParams(max_new_tokens=4),
                       return_hidden=return_hidden)  # fmt: skip
    call = VerifyCall("s", len(PROMPT), (5, 6, 7), draft_parents=parents)
    check_verify_call(call, len(PROMPT), False, spec, backend, EXACT_RULES["exact"], 8)  # type: ignore[arg-type]


def test_a_return_hidden_tree_is_refused_at_admission_on_llamacpp() -> None:
    with pytest.raises(RequestError) as info:
        _check(Backend(), True, (-1, 0, 0))
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert info.value.message == (
        f"draft_parents: {TREE_HIDDEN} (session 's' asked for return_hidden): send a chain"
    )
    _check(Backend(), True, None)  # a chain: admitted
    _check(Backend(), False, (-1, 0, 0))  # a tree without hidden states: admitted
    _check(Backend(tree_hidden_problem=None), True, (-1, 0, 0))  # a backend that returns them
