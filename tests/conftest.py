"""Test-suite wide settings: slow tests run only when EDGESPEC_SLOW=1."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("EDGESPEC_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow test: set EDGESPEC_SLOW=1 to run it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
