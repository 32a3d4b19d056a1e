"""The generic config loader (edgespec.config): typed loading, a file with overrides, named
errors (unknown fields with the closest known one, wrong types and values, union, tuple,
path and section checks), frozen configs and errors that pickle whole; ServerConfig
serves as the example dataclass. Overrides: tests/config/test_overrides.py; files read:
tests/config/test_config_files.py."""

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
)
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.server.config import ServerConfig


def test_defaults_load() -> None:
    cfg = load_config(ServerConfig)
    assert cfg.port == 50051 and cfg.batching == PolicySpec("decodes-first")


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


def test_configs_are_frozen_and_overrides_do_not_mutate_input() -> None:
    data = {"batching": {"name": "lab"}}
    merged = apply_overrides(data, ["batching.name=fcfs"])
    assert data == {"batching": {"name": "lab"}} and merged["batching"]["name"] == "fcfs"
    cfg = from_dict(ServerConfig, merged)
    with pytest.raises(AttributeError):
        cfg.port = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        cfg.batching.params["x"] = 1  # type: ignore[index]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1], "config field '<root>': expected a mapping, got [1] (list)"),
        ({"port": True}, "config field 'port': expected an integer, got true"),
        ({"session_timeout_s": True}, "'session_timeout_s': expected a number, got true"),
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
        ({"choice": None}, "config field 'choice': null matches none of int | str"),
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
