"""Shared by the bad-case tests of the runtime (test_reliability, test_security,
test_resource_limits, test_backend_failures)."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.errors import ErrorCode, RequestError

PROMPT = (3, 1, 4, 1, 5, 9, 2, 6)
GREEDY = SamplingParams(max_new_tokens=20)


def raises_request_error(code: ErrorCode, message: str, fn: Any, *args: Any) -> None:
    """``fn(*args)`` raises a RequestError with exactly this code and message."""
    with pytest.raises(RequestError) as info:
        fn(*args)
    got = (info.value.code, info.value.message)
    assert got == (code, message), got  # a helper module: pytest shows no values unasked
