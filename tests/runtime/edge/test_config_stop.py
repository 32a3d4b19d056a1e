"""``DrafterConfig.stop`` (``edgespec draft --stop``, a config file's ``stop:``): the stop
sequences the device cuts its text at, checked once as the config is built, with the
limits the OpenAI endpoint's ``stop`` has (:mod:`edgespec.core.stop_rules`)."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.config import ConfigError, from_dict
from edgespec.core.stop_rules import MAX_STOP, MAX_STOP_CHARS
from edgespec.runtime.edge.config import DrafterConfig


def test_a_list_of_strings_is_kept_in_order() -> None:
    config = from_dict(DrafterConfig, {"stop": ["\n\n", "Q:"]})
    assert config.stop == ("\n\n", "Q:")
    assert from_dict(DrafterConfig, {}).stop == ()


@pytest.mark.parametrize(
    ("stop", "message"),
    [
        ("Q:", "config field 'stop': expected a list, got 'Q:' (str)"),
        ([3], "config field 'stop[0]': expected a string, got 3 (int)"),
        ([""], "config field 'stop': must be non-empty strings, got ['']"),
        (["a"] * (MAX_STOP + 1), "config field 'stop': takes at most 4 sequences, got 5"),
        (
            ["x" * (MAX_STOP_CHARS + 1)],
            "config field 'stop': a stop sequence has at most 256 characters, got 257",
        ),
    ],
)
def test_stop_sequences_out_of_range_are_refused_at_the_field(stop: Any, message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        from_dict(DrafterConfig, {"stop": stop})
    assert str(refused.value) == message
