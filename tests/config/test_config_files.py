"""Config files as the loader reads them (edgespec.config): a missing file, invalid YAML
named by file, line and column on one line, a top level that is no mapping, an empty file
that is the defaults, and JSON Lines records named by file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.config import ConfigError, load_config, read_yaml
from edgespec.runtime.server.config import ServerConfig


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
    bad.write_text("true\n")
    with pytest.raises(ConfigError) as error:
        read_yaml(bad)
    assert str(error.value) == f"{bad}: top level must be a mapping, got true"  # not bool


def test_read_jsonl_names_file_and_line(tmp_path: Path) -> None:
    from edgespec.config import read_jsonl

    good = tmp_path / "t.jsonl"
    good.write_text('{"a": 1}\n\n{"a": 2}\n')
    assert list(read_jsonl(good)) == [(f"{good}:1", {"a": 1}), (f"{good}:3", {"a": 2})]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(ConfigError) as error:
        list(read_jsonl(bad))
    assert str(error.value) == f"{bad}:2: invalid JSON: Expecting value"
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(ConfigError) as error:
        list(read_jsonl(missing, "trace file"))
    assert str(error.value) == f"{missing}: trace file not found"


def test_an_empty_yaml_file_is_the_defaults(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing set\n")
    assert read_yaml(empty) == {}
    assert load_config(ServerConfig, empty, ["port=7"]) == ServerConfig(port=7)


def test_a_line_nested_too_deeply_is_named_not_a_traceback(tmp_path: Path) -> None:
    """json's RecursionError (a line 200,000 arrays deep) came out of `edgespec sim` as a
    traceback naming neither file nor line."""
    from edgespec.config import read_jsonl

    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"a": 1}\n{"prompt": ' + "[" * 200_000 + "]" * 200_000 + "}\n")
    with pytest.raises(ConfigError) as error:
        list(read_jsonl(deep))
    assert str(error.value) == f"{deep}:2: invalid JSON: nested too deeply"
