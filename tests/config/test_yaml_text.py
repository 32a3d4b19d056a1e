"""YAML text as every config file, override and sweep reads it (edgespec.config.yaml_text):
YAML 1.2 core-schema scalars (``yes``, ``no``, ``1:30`` are strings, ``017`` is 17), a
key given twice refused, nesting and alias expansion bounded, each error naming the
file:line:column or the override as typed."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.config import ConfigError, OverrideError, apply_overrides, parse_override, read_yaml
from edgespec.config.yaml_text import MAX_DEPTH, MAX_NODES, dump_yaml, load_yaml


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("yes", "yes"),
        ("no", "no"),
        ("on", "on"),
        ("off", "off"),
        ("y", "y"),
        ("1:30", "1:30"),
        ("2024-01-01", "2024-01-01"),
        ("=", "="),
        ("017", 17),
        ("0o17", 15),
        ("0x1F", 31),
        ("-12", -12),
        ("1_000", 1000),
        ("true", True),
        ("False", False),
        ("TRUE", True),
        ("~", None),
        ("Null", None),
        (".5", 0.5),
        ("1.", 1.0),
        ("-.inf", float("-inf")),
    ],
)
def test_scalars_are_yaml_1_2_core_schema(tmp_path: Path, text: str, value: object) -> None:
    """In a file and in an override alike; PyYAML's YAML 1.1 read ``yes`` as true, ``1:30``
    as 90 (sexagesimal), ``017`` as 15 (octal) and ``2024-01-01`` as a date."""
    path = tmp_path / "c.yaml"
    path.write_text(f"x: {text}\n")
    for parsed in (read_yaml(path)["x"], parse_override(f"a.b={text}")[1]):
        assert parsed == value and type(parsed) is type(value)


def test_a_yaml_1_1_boolean_word_is_a_string_key_and_a_string_value() -> None:
    assert parse_override("slo_classes={off: 2, on: 1}")[1] == {"off": 2, "on": 1}
    assert apply_overrides({}, ["name=no", "fused=yes"]) == {"name": "no", "fused": "yes"}


def test_merge_keys_still_merge_and_their_keys_may_be_overridden() -> None:
    text = "base: &b {x: 1, y: 2}\ninner: {deep: &i {<<: *b, x: 3}}\nd: {<<: *i, y: 4}\n"
    data = load_yaml(text)
    assert data["inner"]["deep"] == {"x": 3, "y": 2} and data["d"] == {"x": 3, "y": 4}


def test_a_key_given_twice_is_refused_naming_both_places(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text("name: dup\nduration_s: 1\nduration_s: 3\n")
    with pytest.raises(ConfigError) as error:
        read_yaml(path)
    assert str(error.value) == f"{path}:3:1: duplicate key 'duration_s' (first at line 2, column 1)"
    path.write_text("devices: [{count: 2, count: 4}]\n")
    with pytest.raises(ConfigError) as error:
        read_yaml(path)
    assert str(error.value) == f"{path}:1:22: duplicate key 'count' (first at line 1, column 12)"
    with pytest.raises(OverrideError) as error:
        parse_override("a={b: 1, b: 2}")
    assert str(error.value) == (
        "override 'a={b: 1, b: 2}': cannot parse the value: duplicate key 'b' "
        "(first at line 1, column 2)"
    )


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def test_nesting_is_bounded_in_a_file(tmp_path: Path) -> None:
    """900 levels was a RecursionError traceback; at the first level too deep, or (flow
    brackets too deep for any file, found while scanning) at the 101st bracket."""
    path = tmp_path / "deep.yaml"
    path.write_text(f"x: {nested(MAX_DEPTH - 1)}\n")  # the top mapping is a level too
    assert read_yaml(path)["x"] == load_yaml(nested(MAX_DEPTH))[0]
    for levels, column in ((MAX_DEPTH, 4 + MAX_DEPTH - 1), (900, 4 + MAX_DEPTH)):
        path.write_text(f"x: {nested(levels)}\n")
        with pytest.raises(ConfigError) as error:
            read_yaml(path)
        assert str(error.value) == f"{path}:1:{column}: nested deeper than 100 levels"


def test_nesting_is_bounded_in_an_override_key_path_and_value_together() -> None:
    assert parse_override(f"a.b={nested(MAX_DEPTH - 2)}")[0] == ["a", "b"]
    with pytest.raises(OverrideError) as error:
        parse_override(f"a.b={nested(MAX_DEPTH - 1)}")
    assert str(error.value).endswith(": cannot parse the value: nested deeper than 100 levels")
    text = f"duration_s={nested(5000)}"
    with pytest.raises(OverrideError) as error:
        apply_overrides({}, [text])
    assert str(error.value) == (
        f"override '{text[:77]}... (10011 characters)': cannot parse the value: "
        "nested deeper than 100 levels"
    )
    keys = ".".join(["k"] * (MAX_DEPTH + 1))
    with pytest.raises(OverrideError) as error:
        parse_override(f"{keys}=1")
    assert str(error.value).endswith("(203 characters)': key path deeper than 100 levels")


def test_nesting_through_aliases_counts_the_expanded_depth(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    half = MAX_DEPTH // 2
    path.write_text(f"a: &a {nested(half - 1)}\nb: {'[' * half}*a{']' * half}\n")
    assert len(read_yaml(path)["b"]) == 1  # 1 + 50 + 49 levels: loads
    path.write_text(f"a: &a {nested(half)}\nb: {'[' * half}*a{']' * half}\n")
    with pytest.raises(ConfigError) as error:
        read_yaml(path)
    assert str(error.value) == (
        f"{path}:2:{4 + half}: nested deeper than 100 levels once alias *a is expanded"
    )


def bomb(levels: int) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_while_loading(tmp_path: Path) -> None:
    """10^6 leaves took 7 s and 10^7 ran out of memory, in the override's deep copy."""
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb(5))  # 111,116 nodes: loads
    assert len(read_yaml(path)["a4"]) == 10
    path.write_text(bomb(9))
    with pytest.raises(ConfigError) as error:
        read_yaml(path)
    assert str(error.value) == (
        f"{path}:6:45: more than 1,000,000 nodes (values, lists and mappings; an alias counts "
        "as all it stands for), the most a YAML text may hold"
    )
    assert MAX_NODES == 1_000_000


@pytest.mark.parametrize("text", ["a: &a [1, *a]", "a: &a {b: *a}"])
def test_an_alias_inside_the_value_it_names_is_refused(text: str) -> None:
    with pytest.raises(OverrideError) as error:
        parse_override(f"x={text}")
    assert str(error.value).endswith(
        "cannot parse the value: alias *a is inside the value it names"
    )


@pytest.mark.parametrize(
    "value",
    ["0o17", "0x1F", "017", "1_000", "1e3", "~", "", "yes", "1:30", 1.5, 10**30, True, None,
     {"name": "0o17", "gamma": [1, "2"]}],
)  # fmt: skip
def test_what_dump_yaml_writes_load_yaml_reads_back(value: object) -> None:
    """PyYAML's own dumper quotes by YAML 1.1: '0o17' went out plain and came back as 15."""
    assert load_yaml(dump_yaml(value)) == value


def test_a_sweep_value_that_looks_like_a_number_survives_its_override_text() -> None:
    from edgespec.sweeps.grid import override_text

    assert override_text("name", "0o17") == "name='0o17'"
