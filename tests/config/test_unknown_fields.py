"""Of several unknown keys, a config's error names the first one given (in a file, the first
in the file, at its line), not the alphabetically first (edgespec.config.convert.from_dict);
and policy params given without a name, in a section too, are the default policy's
(edgespec.config.default_policy_names)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from edgespec.config import ConfigError, PolicySpec, default_policy_names, from_dict, load_config


@dataclass(frozen=True, slots=True)
class Section:
    window: PolicySpec = field(default_factory=lambda: PolicySpec("static"))
    stop: PolicySpec | None = None


@dataclass(frozen=True, slots=True)
class Config:
    count: int = 1
    section: Section = field(default_factory=Section)


def test_the_first_unknown_key_given_is_named() -> None:
    with pytest.raises(ConfigError) as info:
        from_dict(Config, {"count": 2, "zeta": 1, "alpha": 2})
    assert str(info.value) == "config field 'zeta': unknown field; known: ['count', 'section']"


def test_a_files_first_unknown_key_is_named_at_its_line(tmp_path: Path) -> None:
    file = tmp_path / "c.yaml"
    file.write_text("count: 2\nzeta: 1\nalpha: 2\n")
    with pytest.raises(ConfigError) as info:
        load_config(Config, file)
    assert str(info.value) == (
        f"{file}:2: config field 'zeta': unknown field; known: ['count', 'section']"
    )


def test_params_alone_in_a_section_are_its_default_policys() -> None:
    data = {"section": {"window": {"params": {"gamma": 2}}, "stop": {"params": {}}}}
    assert default_policy_names(Config, data) == {
        "section": {"window": {"name": "static", "params": {"gamma": 2}}, "stop": {"params": {}}}
    }
    config = load_config(Config, None, ["section.window.params.gamma=3"])
    assert config.section.window == PolicySpec("static", {"gamma": 3})
