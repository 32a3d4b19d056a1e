"""The device the runtime's property (lossless) tests put their tiny models on:
``EDGESPEC_TEST_DEVICE`` (cpu, cuda or cuda:N; default cpu), e.g.
``EDGESPEC_TEST_DEVICE=cuda pytest tests/runtime/server/test_lossless_batching.py``. A
device this machine lacks fails the tests (it never falls back to the CPU silently)."""

from __future__ import annotations

import os
from typing import TypeVar

import torch

from edgespec.arguments import DevicePlacement
from edgespec.models.devices import check_device_available

TEST_DEVICE = DevicePlacement(os.environ.get("EDGESPEC_TEST_DEVICE", "cpu")).device
"""The device named by ``EDGESPEC_TEST_DEVICE`` (syntax-checked: a bad value fails here)."""

Module = TypeVar("Module", bound=torch.nn.Module)


def on_test_device(model: Module) -> Module:
    """``model`` moved to :data:`TEST_DEVICE` (as it is on the CPU)."""
    if TEST_DEVICE == "cpu":
        return model
    check_device_available(TEST_DEVICE)
    return model.to(TEST_DEVICE)
