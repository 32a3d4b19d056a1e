"""``key.path=value`` overrides (edgespec.config): malformed keys and unparsable values
named as typed, list indexes, null sections filled, values keeping their ``=`` or empty,
overrides written from CLI flags, and values read as YAML 1.2 reads them (a number with an
exponent is a float in a file, an override and a sweep alike)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.config import (
    ConfigError,
    apply_overrides,
    load_config,
    parse_override,
    read_yaml,
)
from edgespec.runtime.server.config import ServerConfig
from edgespec.sweeps.grid import parse_grid


def test_bad_override_syntax() -> None:
    with pytest.raises(ConfigError, match=r"^override 'port': must look like key.path=value$"):
        load_config(ServerConfig, overrides=["port"])


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a..b=1", "empty key segment"),
        (".x=1", "empty key segment"),
        ("x.=1", "empty key segment"),
        ("a. .b=1", "empty key segment"),
        ("=1", "empty key"),
        (" =1", "empty key"),
    ],
)
def test_an_override_with_an_empty_key_segment_is_malformed(text: str, problem: str) -> None:
    """Not an unknown field named after the part before the gap ("config field 'a'")."""
    with pytest.raises(ConfigError) as info:
        apply_overrides({"a": {"b": 0}}, [text])
    assert str(info.value) == f"override {text!r}: {problem}"


def test_unparsable_override_value_is_a_named_config_error() -> None:
    # A ConfigError (one line from the CLI), not a yaml traceback.
    with pytest.raises(ConfigError, match=r"override 'acceptance.traces=\[a.jsonl': cannot parse"):
        apply_overrides({}, ["acceptance.traces=[a.jsonl"])


def test_overrides_index_into_lists() -> None:
    data = {"pools": [{"count": 1}, {"count": 2}]}
    assert apply_overrides(data, ["pools.1.count=50"])["pools"] == [{"count": 1}, {"count": 50}]
    with pytest.raises(ConfigError, match=r"'pools.2': list index must be 0..1, got '2'"):
        apply_overrides(data, ["pools.2.count=5"])
    with pytest.raises(ConfigError, match="'pools.0.count.x': cannot override inside"):
        apply_overrides(data, ["pools.0.count.x=5"])


def test_overrides_from_flags_skips_unset_and_round_trips() -> None:
    from edgespec.config import overrides_from_flags

    texts = overrides_from_flags({"port": 7, "host": None, "auth_tokens": ["a", "b"]})
    assert texts == ["port=7", 'auth_tokens=["a", "b"]']
    cfg = load_config(ServerConfig, overrides=texts)
    assert (cfg.port, cfg.auth_tokens) == (7, ("a", "b"))


def test_override_values_keep_their_equals_and_may_be_empty() -> None:
    cfg = load_config(ServerConfig, overrides=["target=a=b", "host=", "tls_cert=null"])
    assert (cfg.target, cfg.host, cfg.tls_cert) == ("a=b", "", None)
    with pytest.raises(ConfigError) as error:
        apply_overrides({}, [" port =[1"])
    assert str(error.value).startswith("override ' port =[1': cannot parse the value: ")


def test_overrides_fill_a_null_section_and_index_tuples() -> None:
    assert apply_overrides({"a": None}, ["a.b=1"]) == {"a": {"b": 1}}
    data = {"a": (1, 2)}
    assert apply_overrides(data, ["a.0=5"]) == {"a": [5, 2]} and data == {"a": (1, 2)}


@pytest.mark.parametrize("index", ["x", "-1", "²"])
def test_a_list_index_that_is_no_number_is_named(index: str) -> None:
    data = {"pools": [{"count": 1}, {"count": 2}]}
    with pytest.raises(ConfigError) as error:
        apply_overrides(data, [f"pools.{index}.count=5"])
    assert str(error.value) == (
        f"config field 'pools.{index}': list index must be 0..1, got {index!r}"
    )


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1e3", 1000.0),
        ("20e6", 2e7),
        ("1.5e3", 1500.0),
        ("1.0e12", 1e12),
        ("-2E-3", -0.002),
        ("+1e0", 1.0),
        ("1_000e1", 10000.0),
        ("1.0e+12", 1e12),
    ],
)
def test_a_number_with_an_exponent_is_a_float(tmp_path: Path, text: str, value: float) -> None:
    """YAML 1.1 (PyYAML) reads ``1e3`` and ``1.0e12`` as strings; configs read them as
    YAML 1.2 does, in a file, an override and a sweep alike."""
    path = tmp_path / "c.yaml"
    path.write_text(f"x: {text}\n")
    for parsed in (read_yaml(path)["x"], parse_override(f"a.b={text}")[1]):
        assert parsed == value and type(parsed) is float
    assert parse_grid([f"a={text},2"]) == {"a": [value, 2]}


@pytest.mark.parametrize(
    ("text", "value"),
    [("12", 12), ("1e", "1e"), ("e5", "e5"), ("1e5x", "1e5x"), ("1.5", 1.5), ("'1e3'", "1e3")],
)
def test_other_scalars_read_as_yaml_reads_them(text: str, value: object) -> None:
    parsed = parse_override(f"a={text}")[1]
    assert parsed == value and type(parsed) is type(value)
