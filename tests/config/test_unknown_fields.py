"""Of several unknown keys, a config's error names the first one given (in a file, the first
in the file, at its line), not the alphabetically first (edgespec.config.convert.from_dict);
and policy params given without a name, in a section too, are the default policy's
(edgespec.config.default_policy_names)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from edgespec.config import (
    POLICY_KIND,
    ConfigError,
    PolicySpec,
    default_policy_names,
    from_dict,
    load_config,
)


@dataclass(frozen=True, slots=True)
class Section:
    window: PolicySpec = field(default_factory=lambda: PolicySpec("static"))
    stop: PolicySpec | None = field(default=None, metadata={POLICY_KIND: "stop"})
    plain: PolicySpec | None = None


@dataclass(frozen=True, slots=True)
class Config:
    count: int = 1
    section: Section = field(default_factory=Section)


def test_the_first_unknown_key_given_is_named() -> None:
    with pytest.raises(ConfigError) as info:
        from_dict(Config, {"count": 2, "zeta": 1, "alpha": 2})
    assert str(info.value) == "config field 'zeta': unknown field; known: ['count', 'section']"


def test_keys_another_reader_reads_are_known_and_not_read() -> None:
    assert from_dict(Config, {"count": 2, "other": {"x": 1}}, others=("other",)) == Config(2)
    with pytest.raises(ConfigError) as info:
        from_dict(Config, {"othr": 1}, others=("other",))
    assert str(info.value) == (
        "config field 'othr': unknown field; known: ['count', 'other', 'section'] "
        "(did you mean 'other'?)"
    )


def test_a_files_first_unknown_key_is_named_at_its_line(tmp_path: Path) -> None:
    file = tmp_path / "c.yaml"
    file.write_text("count: 2\nzeta: 1\nalpha: 2\n")
    with pytest.raises(ConfigError) as info:
        load_config(Config, file)
    assert str(info.value) == (
        f"{file}:2: config field 'zeta': unknown field; known: ['count', 'section']"
    )


def test_params_alone_in_a_section_are_its_default_policys() -> None:
    data = {"section": {"window": {"params": {"gamma": 2}}}}
    assert default_policy_names(Config, data) == {
        "section": {"window": {"name": "static", "params": {"gamma": 2}}}
    }
    config = load_config(Config, None, ["section.window.params.gamma=3"])
    assert config.section.window == PolicySpec("static", {"gamma": 3})


@pytest.mark.parametrize(
    ("registered", "refusal"),
    [
        ({}, "name is required: no stop policy runs here by default"),
        (
            {"stop": {"mlp": 1, "lin": 2}},
            "name is required: no stop policy runs here by default; known: ['lin', 'mlp']",
        ),
    ],
)
def test_params_alone_for_a_policy_without_a_default_are_refused_at_it(
    registered: dict[str, dict[str, int]], refusal: str
) -> None:
    """Was ``config field 'section.stop.name': required field is missing``."""
    with pytest.raises(ConfigError) as info:
        default_policy_names(Config, {"section": {"stop": {"params": {}}}}, registered)
    assert str(info.value) == f"config field 'section.stop': {refusal}"


def test_params_alone_for_a_policy_of_no_kind_are_refused_at_it() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(Config, None, ["section.plain.params.x=1"])
    assert str(info.value) == (
        "config field 'section.plain': name is required: no policy runs here by default"
    )


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        ("1: foo\n", "config field '1': a number where a field name is expected"),
        ("count: 2\n3: foo\n", "config field '3': a number where a field name is expected"),
        ("true: foo\n", "config field 'true': true/false where a field name is expected"),
        ("null: foo\n", "config field 'null': null where a field name is expected"),
        (
            "section:\n  3: foo\n",
            "config field 'section.3': a number where a field name is expected",
        ),
    ],
)
def test_a_key_that_is_no_string_is_named_as_written_at_its_line(
    text: str, refusal: str, tmp_path: Path
) -> None:
    """Was ``config field '[1]': unknown field`` (a list index's spelling), with no line
    for a top-level key."""
    file = tmp_path / "c.yaml"
    file.write_text(text)
    line = text.count("\n")
    known = (
        "['count', 'section']" if not text.startswith("section") else "['plain', 'stop', 'window']"
    )
    with pytest.raises(ConfigError) as info:
        load_config(Config, file)
    assert str(info.value) == f"{file}:{line}: {refusal}; known: {known}"


def test_a_float_key_is_a_number_where_a_field_name_is_expected() -> None:
    with pytest.raises(ConfigError) as info:
        from_dict(Config, {2.5: 1})
    assert str(info.value) == (
        "config field '2.5': a number where a field name is expected; known: ['count', 'section']"
    )
