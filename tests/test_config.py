"""The generic config loader (edgespec.config): typed loading, overrides, YAML and JSONL
readers, named errors; ServerConfig serves as the example dataclass."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import pytest

from edgespec.config import (
    ConfigError,
    ConfigFileError,
    OverrideError,
    PolicySpec,
    RecordError,
    apply_overrides,
    from_dict,
    load_config,
    parse_override,
    read_yaml,
)
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.server.config import ServerConfig
from edgespec.sweeps.grid import parse_grid


def test_defaults_load() -> None:
    cfg = load_config(ServerConfig)
    assert cfg.port == 50051 and cfg.batching == PolicySpec("fcfs")


def test_yaml_and_overrides(tmp_path: Path) -> None:
    path = tmp_path / "server.yaml"
    path.write_text("port: 6000\nbatching: {name: lab, params: {max_length_ratio: 2.0}}\n")
    cfg = load_config(ServerConfig, path, ["max_batch_size=4", "batching.name=lab"])
    assert (cfg.port, cfg.max_batch_size, cfg.batching.name) == (6000, 4, "lab")
    assert cfg.batching.params["max_length_ratio"] == 2.0  # the same policy keeps its params
    switched = load_config(ServerConfig, path, ["batching.name=fcfs"])
    assert switched.batching == PolicySpec("fcfs")  # another starts from its own defaults


def test_unknown_field_is_named() -> None:
    with pytest.raises(ConfigError, match="config field 'batching.nmae': unknown field"):
        from_dict(ServerConfig, {"batching": {"nmae": "x"}})


def test_an_unknown_field_ends_with_the_closest_known_field() -> None:
    """From a file or an override alike; nothing added when no field is close."""
    known = "['choice', 'pair', 'section', 'where']"
    with pytest.raises(ConfigError) as error:
        from_dict(Typed, {"sectoin": {"size": 1}})
    assert str(error.value) == (
        f"config field 'sectoin': unknown field; known: {known} (did you mean 'section'?)"
    )
    with pytest.raises(ConfigError) as error:
        from_dict(Typed, apply_overrides({}, ["section.szie=2"]))
    assert str(error.value) == (
        "config field 'section.szie': unknown field; known: ['size'] (did you mean 'size'?)"
    )
    with pytest.raises(ConfigError) as error:
        from_dict(Typed, {"zzz": 1})
    assert str(error.value) == f"config field 'zzz': unknown field; known: {known}"


def test_config_errors_pickle_whole() -> None:
    """A sweep's worker process sends its error back pickled: every kind arrives as raised."""
    errors = [
        ConfigError("a.b", "unknown field; known: ['c'] (did you mean 'c'?)"),
        ConfigFileError("f.yaml", "file not found"),
        RecordError("f.jsonl:3", "invalid JSON", "x"),
        OverrideError("a..b=1", "empty key segment", "--sweep"),
    ]
    for error in errors:
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error)
        assert (str(copy), copy.path, copy.message) == (str(error), error.path, error.message)


def test_wrong_type_is_named() -> None:
    with pytest.raises(ConfigError, match="config field 'port': expected an integer, got 'abc'"):
        load_config(ServerConfig, overrides=["port=abc"])


def test_bad_literal_and_range() -> None:
    with pytest.raises(ConfigError, match="'dtype': must be one of"):
        from_dict(ServerConfig, {"dtype": "int3"})
    with pytest.raises(ConfigError, match="'max_batch_size': must be >= 1"):
        from_dict(ServerConfig, {"max_batch_size": 0})
    with pytest.raises(ConfigError, match="'server': expected host:port"):
        from_dict(DrafterConfig, {"server": "nohost"})
    with pytest.raises(ConfigError, match=r"'link_seed': must be in \[0, 2\*\*63\), got -3"):
        from_dict(DrafterConfig, {"link_seed": -3})


def test_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError) as missing_error:
        load_config(ServerConfig, missing)
    assert str(missing_error.value) == f"{missing}: file not found"
    bad = tmp_path / "bad.yaml"
    bad.write_text("port: [1, 2\n")
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_config(ServerConfig, bad)


def test_yaml_syntax_error_names_file_line_and_column_on_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nseed: [1,\n duration_s: 2\n")
    with pytest.raises(ConfigError) as error:
        read_yaml(bad)
    assert str(error.value) == (
        f"{bad}:4:1: invalid YAML: expected ',' or ']', but got '<stream end>'"
        " (while parsing a flow sequence at line 2, column 7)"
    )
    bad.write_text("a: 1\n b: 2\n")
    with pytest.raises(ConfigError) as error:
        read_yaml(bad)
    assert str(error.value) == f"{bad}:2:3: invalid YAML: mapping values are not allowed here"
    bad.write_text("- 1\n")
    with pytest.raises(ConfigError) as error:
        read_yaml(bad)
    assert str(error.value) == f"{bad}: top level must be a mapping, got list"


def test_configs_are_frozen_and_overrides_do_not_mutate_input() -> None:
    data = {"batching": {"name": "lab"}}
    merged = apply_overrides(data, ["batching.name=fcfs"])
    assert data == {"batching": {"name": "lab"}} and merged["batching"]["name"] == "fcfs"
    cfg = from_dict(ServerConfig, merged)
    with pytest.raises(AttributeError):
        cfg.port = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        cfg.batching.params["x"] = 1  # type: ignore[index]


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


def test_read_jsonl_names_file_and_line(tmp_path: Path) -> None:
    from edgespec.config import read_jsonl

    good = tmp_path / "t.jsonl"
    good.write_text('{"a": 1}\n\n{"a": 2}\n')
    assert list(read_jsonl(good)) == [("t.jsonl:1", {"a": 1}), ("t.jsonl:3", {"a": 2})]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(ConfigError, match=r"^bad\.jsonl:2: invalid JSON: "):
        list(read_jsonl(bad))
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(ConfigError) as error:
        list(read_jsonl(missing, "trace file"))
    assert str(error.value) == f"{missing}: trace file not found"


def test_overrides_from_flags_skips_unset_and_round_trips() -> None:
    from edgespec.config import overrides_from_flags

    texts = overrides_from_flags({"port": 7, "host": None, "auth_tokens": ["a", "b"]})
    assert texts == ["port=7", 'auth_tokens=["a", "b"]']
    cfg = load_config(ServerConfig, overrides=texts)
    assert (cfg.port, cfg.auth_tokens) == (7, ("a", "b"))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1], "config field '<root>': expected a mapping, got [1] (list)"),
        ({"port": True}, "config field 'port': expected an integer, got True (bool)"),
        ({"session_timeout_s": True}, "'session_timeout_s': expected a number, got True (bool)"),
        ({"host": 5}, "config field 'host': expected a string, got 5 (int)"),
        ({"auth_tokens": "abc"}, "config field 'auth_tokens': expected a list, got 'abc' (str)"),
        ({"prometheus_port": "x"}, "'prometheus_port': expected an integer, got 'x' (str)"),
        ({"slo_classes": {1: 2.0}}, "config field 'slo_classes': expected a string, got 1 (int)"),
        ({"zz": 1, "aa": 2}, "config field 'zz': unknown field; known: "),  # the first given
    ],
)
def test_a_wrong_value_is_refused_where_it_is(data: object, message: str) -> None:
    """No bool passes as a number, no string as a list of its letters; an Optional field's
    error is its type's own; of several unknown fields the first in order is named."""
    with pytest.raises(ConfigError) as error:
        from_dict(ServerConfig, data)
    assert message in str(error.value)
    assert str(error.value).startswith("config field '")


@dataclasses.dataclass(frozen=True)
class Section:
    size: int = 1

    def validate(self) -> None:
        if self.size > 9:
            raise ValueError(f"size {self.size} is over 9")


@dataclasses.dataclass(frozen=True)
class Typed:
    """The loader's other types, which the repository's configs use little or not at all."""

    choice: int | str = 0
    pair: tuple[int, str] = (0, "")
    where: Path = Path()
    section: Section = dataclasses.field(default_factory=Section)
    derived: int = dataclasses.field(default=0, init=False)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"choice": None}, "config field 'choice': None (NoneType) matches none of int | str"),
        ({"choice": 1.5}, "config field 'choice': 1.5 (float) matches none of int | str"),
        ({"pair": [1]}, "config field 'pair': expected 2 items, got 1"),
        ({"pair": [1, 2]}, "config field 'pair[1]': expected a string, got 2 (int)"),
        ({"where": 5}, "config field 'where': expected a path, got 5 (int)"),
        ({"section": {"size": 10}}, "config field 'section': size 10 is over 9"),
        (
            {"derived": 1},
            "config field 'derived': unknown field; known: ['choice', 'pair', 'section', 'where']",
        ),
    ],
)
def test_unions_fixed_tuples_paths_and_section_checks(data: object, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        from_dict(Typed, data)
    assert str(error.value) == message


def test_typed_values_load() -> None:
    data = {"choice": "a", "pair": [3, "b"], "where": "x/y", "section": {"size": 9}}
    assert from_dict(Typed, data) == Typed("a", (3, "b"), Path("x/y"), Section(9))


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


def test_an_empty_yaml_file_is_the_defaults(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing set\n")
    assert read_yaml(empty) == {}
    assert load_config(ServerConfig, empty, ["port=7"]) == ServerConfig(port=7)


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
