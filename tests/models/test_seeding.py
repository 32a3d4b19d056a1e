"""torch_seeded: inside, the draws of torch.manual_seed(seed); after, the caller's
generator as it was."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from edgespec.models.seeding import torch_seeded  # noqa: E402


def test_inside_the_seeds_draws_and_after_the_callers_generator_untouched() -> None:
    torch.manual_seed(123)
    expected_after = torch.rand(4)
    torch.manual_seed(7)
    expected_inside = torch.rand(4)

    torch.manual_seed(123)
    with torch_seeded(7):
        inside = torch.rand(4)
    assert torch.equal(inside, expected_inside)
    assert torch.equal(torch.rand(4), expected_after)


def test_the_callers_generator_is_restored_after_an_error() -> None:
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    with pytest.raises(RuntimeError, match="inside"), torch_seeded(0):
        torch.rand(10)
        raise RuntimeError("inside")
    assert torch.equal(torch.rand(3), expected)
