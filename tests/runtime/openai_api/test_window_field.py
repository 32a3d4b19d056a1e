"""What a request controls of ``edgespec.window`` and of token-id prompts is checked as it
is read: no field of the window object (nor of ``edgespec``) is ignored, its policy name is
bounded like every identifier, and an out-of-vocabulary error quotes a client's ids clipped;
what a refusal quotes of the body is spelled as JSON."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.runtime.openai_api.errors import ApiError
from edgespec.runtime.openai_api.extension import WindowChoice
from edgespec.runtime.openai_api.prompts import prompt_ids
from edgespec.runtime.openai_api.schema import Defaults, Limits, decode_body, parse_request


def _refusal(window: Any) -> ApiError:
    body = {"model": "tiny", "prompt": "w1", "edgespec": {"window": window}}
    with pytest.raises(ApiError) as info:
        parse_request(body, False, Defaults(), Limits())
    return info.value


def _window(window: Any) -> WindowChoice | None:
    body = {"model": "tiny", "prompt": "w1", "edgespec": {"window": window}}
    return parse_request(body, False, Defaults(), Limits()).window


def test_a_misspelled_field_of_the_window_is_refused_not_ignored() -> None:
    """``param`` for ``params``: the request ran with the policy's default γ before."""
    error = _refusal({"name": "static", "param": {"gamma": 2}})
    assert (error.status, error.param, error.code) == (400, "edgespec.window", "unknown_parameter")
    assert error.message == 'edgespec.window has unknown fields ["param"] (known: name, params)'


def test_an_unknown_field_of_edgespec_is_an_unknown_parameter() -> None:
    """Its code was null, every other unknown field's ``unknown_parameter``; the names were
    quoted in Python's spelling (``['windw']``)."""
    body = {"model": "tiny", "prompt": "w1", "edgespec": {"windw": "static"}}
    with pytest.raises(ApiError) as info:
        parse_request(body, False, Defaults(), Limits())
    error = info.value
    assert (error.status, error.param, error.code, error.message) == (
        400, "edgespec", "unknown_parameter",
        'edgespec has unknown fields ["windw"] (known: mode, slo_class, window)',
    )  # fmt: skip


def test_a_body_that_is_no_object_is_quoted_as_json() -> None:
    """It was named by its Python type: ``got list``."""
    with pytest.raises(ApiError) as info:
        decode_body(b'[null, true, "w1"]')
    assert info.value.message == 'request body must be a JSON object, got [null, true, "w1"]'


@pytest.mark.parametrize("window", ["x" * 129, {"name": "x" * 129}], ids=["string", "object"])
def test_a_window_policy_name_is_bounded_like_an_identifier(window: Any) -> None:
    """An unknown name was looked up for the closest known one, at a cost that grows with
    its length (a quarter of a second for a 1 MiB body, on the event loop)."""
    error = _refusal(window)
    assert (error.status, error.param) == (400, "edgespec.window")
    assert error.message == "edgespec.window names a policy of 129 characters; the limit is 128"


def test_a_window_is_still_a_name_or_name_and_params() -> None:
    assert _window("static") == WindowChoice("static", {})
    assert _window({"name": "dynamic"}) == WindowChoice("dynamic", {})
    assert _window({"name": "dynamic", "params": None}) == WindowChoice("dynamic", {})
    assert _refusal({"name": "static", "params": 0}).message == (
        'edgespec.window must be a policy name or {name, params}, got {"name": "static", '
        '"params": 0}'
    )
    assert _window({"name": "static", "params": {"gamma": 2}}) == WindowChoice(
        "static", {"gamma": 2}
    )
    assert _refusal({"params": {}}).message == (
        'edgespec.window must be a policy name or {name, params}, got {"params": {}}'
    )


def test_out_of_vocabulary_prompt_ids_are_quoted_clipped() -> None:
    """Five ids of 4,000 digits made a 20,000-character message."""
    huge = 10**4000
    with pytest.raises(ApiError) as info:
        prompt_ids(None, frozenset(), (1, huge, huge, huge, huge, huge, huge), 64, Limits())
    error = info.value
    assert (error.status, error.param) == (400, "prompt")
    assert error.message == (
        f"prompt token ids [1{'0' * 77}… are outside the target's vocabulary of 64"
    )


def test_out_of_vocabulary_prompt_ids_are_named() -> None:
    with pytest.raises(ApiError) as info:
        prompt_ids(None, frozenset(), (1, 99, 2, 64), 64, Limits())
    assert info.value.message == (
        "prompt token ids [99, 64] are outside the target's vocabulary of 64"
    )
