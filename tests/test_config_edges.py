"""edgespec.config at its edges: exact messages for a too-long fixed tuple, a value of
the wrong shape, a YAML error without a position or without a start mark, an unparsable
override value, a section check that names its own field; read-only mappings, numbers
loaded as floats, Path values, falsy and blank values kept as overrides, a folder where
a file should be, a record error's path."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

import pytest

from edgespec.config import (
    ConfigError,
    RecordError,
    apply_overrides,
    from_dict,
    overrides_from_flags,
    read_jsonl,
    read_yaml,
)


@dataclasses.dataclass(frozen=True)
class Inner:
    size: int = 1

    def validate(self) -> None:
        if self.size < 0:
            raise ConfigError("inner.size", f"must be >= 0, got {self.size}")


@dataclasses.dataclass(frozen=True)
class Loaded:
    ratio: float = 0.5
    pair: tuple[int, str] = (0, "")
    where: Path = Path()
    inner: Inner = dataclasses.field(default_factory=Inner)
    table: Mapping[str, int] = dataclasses.field(default_factory=dict)


def test_an_integer_for_a_float_field_loads_as_a_float() -> None:
    loaded = from_dict(Loaded, {"ratio": 2})
    assert loaded.ratio == 2.0 and type(loaded.ratio) is float


def test_a_mapping_field_loads_read_only() -> None:
    table = from_dict(Loaded, {"table": {"a": 1}}).table
    assert dict(table) == {"a": 1}
    with pytest.raises(TypeError):
        table["b"] = 2  # type: ignore[index]


def test_a_path_value_may_already_be_a_path() -> None:
    assert from_dict(Loaded, {"where": Path("a/b")}).where == Path("a/b")


def test_a_fixed_tuple_with_too_many_items_is_refused() -> None:
    with pytest.raises(ConfigError) as error:
        from_dict(Loaded, {"pair": [1, "a", 3]})
    assert str(error.value) == "config field 'pair': expected 2 items, got 3"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"table": [1]}, "config field 'table': expected a mapping, got [1] (list)"),
        ({"pair": 5}, "config field 'pair': expected a list, got 5 (int)"),
        ({"pair": {"a": 1}}, "config field 'pair': expected a list, got {'a': 1} (dict)"),
    ],
)
def test_a_value_of_the_wrong_shape_is_named(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as error:
        from_dict(Loaded, data)
    assert str(error.value) == message


def test_a_section_check_that_names_its_own_field_is_not_wrapped() -> None:
    with pytest.raises(ConfigError) as error:
        from_dict(Loaded, {"inner": {"size": -1}})
    assert str(error.value) == "config field 'inner.size': must be >= 0, got -1"
    assert error.value.path == "inner.size"


def test_falsy_flag_values_are_still_overrides() -> None:
    """Only None means "not given": 0, false and "" are given values."""
    texts = overrides_from_flags({"a": 0, "b": False, "c": "", "d": None, "e": []})
    assert texts == ["a=0", "b=false", 'c=""', "e=[]"]
    assert apply_overrides({}, texts) == {"a": 0, "b": False, "c": "", "e": []}
    assert apply_overrides({}, ["a= ", "b=\t"]) == {"a": "", "b": ""}  # blank is empty, not null


def test_an_unparsable_override_value_says_the_yaml_problem() -> None:
    """The problem itself, not the YAML parser's context line ("while parsing ...")."""
    with pytest.raises(ConfigError) as error:
        apply_overrides({}, ["port=[1"])
    assert str(error.value) == (
        "override 'port=[1': cannot parse the value: expected ',' or ']', but got '<stream end>'"
    )


def test_a_folder_is_not_a_yaml_or_jsonl_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as error:
        read_yaml(tmp_path)
    assert str(error.value) == f"{tmp_path}: is a directory, not a file"
    with pytest.raises(ConfigError) as error:
        list(read_jsonl(tmp_path, "trace"))
    assert str(error.value) == f"{tmp_path}: is a directory, not a trace"


def test_a_yaml_error_with_a_context_but_no_start_mark(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: @b\n")
    with pytest.raises(ConfigError) as error:
        read_yaml(bad)
    assert str(error.value) == (
        f"{bad}:1:4: invalid YAML: found character '@' that cannot start any token"
    )


def test_a_yaml_error_without_a_position_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: \x07\n")
    with pytest.raises(ConfigError) as error:
        read_yaml(bad)
    assert str(error.value) == (
        f"{bad}: invalid YAML: unacceptable character #x0007: special characters are not "
        'allowed in "<unicode string>", position 3'
    )


def test_a_record_error_starts_with_file_line_and_field() -> None:
    error = RecordError("t.jsonl:3", "must be >= 0", "tokens")
    assert (str(error), error.path, error.message) == (
        "t.jsonl:3: tokens: must be >= 0",
        "t.jsonl:3.tokens",
        "must be >= 0",
    )
    bare = RecordError("t.jsonl:4", "invalid JSON")
    assert (str(bare), bare.path) == ("t.jsonl:4: invalid JSON", "t.jsonl:4")
