"""``edgespec draft --verify semantic``: the shipped default threshold and the measured
agreement, held to the decision head the server serves (its Health's SHA-256): the
default from a server serving another head, or naming none, is refused; the notes are
said only where they were measured (draft_checks.semantic_notes)."""

from __future__ import annotations

import hashlib

import pytest

from edgespec.config import ConfigError, load_config
from edgespec.policies.semantic.bundled import bundled_dir
from edgespec.runtime.commands.draft_checks import semantic_notes
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.messages import ServerHealth

SHIPPED = hashlib.sha256((bundled_dir() / "gemma3-270m-head.json").read_bytes()).hexdigest()
SEMANTIC = ["verification=semantic", "channel_uplink_mbps=20"]


def _notes(served: str | None, *fields: str, draft: str = "gemma3-270m-draft") -> list[str]:
    config = load_config(DrafterConfig, None, [*SEMANTIC, f"draft={draft}", *fields])
    health = ServerHealth(True, 262_144, None, None, None, None, None,
                          semantic_head_sha256=served)  # fmt: skip
    return semantic_notes(config, health)


def test_the_shipped_default_from_a_server_serving_the_measured_head_says_what_it_kept() -> None:
    (note,) = _notes(SHIPPED)
    assert note.startswith("WISV threshold T = 1, the bundled Gemma 3 270M head's shipped "
                           "default (no --threshold given): it kept the target's final answer "
                           "on ")  # fmt: skip


@pytest.mark.parametrize(
    ("served", "serves"),
    [
        ("f" * 64, "another head (SHA-256 ffffffffffff...)"),
        (
            None,
            "no head it names (it serves no semantic verification, or predates saying which)",
        ),
    ],
)
def test_the_shipped_default_from_a_server_serving_another_head_is_refused(
    served: str | None, serves: str
) -> None:
    """It was taken whatever head the server served: a head of another training run
    judged at T = 1, with the bundled head's agreement said of it."""
    with pytest.raises(ConfigError) as error:
        _notes(served)
    told = (
        f"the shipped default threshold T = 1 was measured with the bundled head (SHA-256 "
        f"{SHIPPED[:12]}...); the server serves {serves}: give "
    )
    assert (error.value.path, error.value.message) == ("verification", f"{told}threshold")
    assert error.value.flag_message == f"{told}--threshold"
    assert _notes(served, "threshold=12") == []  # given: nothing measured to say


def test_a_threshold_above_the_default_is_told_the_agreement_measured_there() -> None:
    (note,) = _notes(SHIPPED, "threshold=12")
    assert note.startswith("WISV threshold T = 12 is above the bundled Gemma 3 270M head's "
                           "default T = 1 ")  # fmt: skip
    assert (
        "measured at T = 12: the final answer agreed with target-only decoding on 20% on the "
        "good channel (speed-up 2.10x over exact SD), 20% on the poor channel" in note
    )
    (between,) = _notes(SHIPPED, "threshold=3")  # between measured ones: T = 2's and 4's
    assert "not measured; at T = 2: the final answer agreed with target-only decoding on 78%" in (
        between
    )
    assert "; at T = 4: the final answer agreed with target-only decoding on 60% on" in between
    assert _notes(SHIPPED, "threshold=1") == []  # the default: nothing to say
    assert _notes(SHIPPED, "threshold=12", draft="tiny-draft") == []  # not the bundled pair
    assert semantic_notes(load_config(DrafterConfig, None, []), _health()) == []  # exact


def _health() -> ServerHealth:
    return ServerHealth(True, 64, None, None, None, None, None)
