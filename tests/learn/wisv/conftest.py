"""Fixtures for the WISV tests: ``pair``, a tiny target and a noisy copy of it as the draft
(one pair per test module)."""

from __future__ import annotations

import pytest

from edgespec.runtime.testing import noisy_copy, tiny_llama


@pytest.fixture(scope="module")
def pair() -> tuple[object, object]:
    target = tiny_llama(seed=0)
    return target, noisy_copy(target, 0.3)
