"""How config files are read (edgespec.config.files), from Python and from ``edgespec
sim``: text that is not UTF-8 and a folder are one-line errors naming the file; a file
named like an override (``k=v.yaml``) is a scenario file; an override that does not parse
is quoted as typed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from edgespec.cli import main
from edgespec.config import ConfigError, read_jsonl, read_text, read_yaml
from tests.sim.helpers import tiny_scenario

QUIET = ["--quiet", "--no-plots", "--overwrite"]


def test_a_yaml_file_that_is_not_utf8_names_the_byte_and_its_offset(tmp_path: Path) -> None:
    """Was a UnicodeDecodeError traceback."""
    path = tmp_path / "c.yaml"
    path.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(ConfigError) as error:
        read_yaml(path)
    assert str(error.value) == f"{path}: not UTF-8 text (byte 0xe9 at offset 9)"
    with pytest.raises(ConfigError, match=r"c.yaml: not UTF-8 text \(byte 0xe9 at offset 9\)$"):
        read_text(path)


def test_a_jsonl_file_that_is_not_utf8_names_the_offset_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{"b": "\xff"}\n')
    records = read_jsonl(path, "trace file")
    assert next(records) == ("t.jsonl:1", {"a": 1})
    with pytest.raises(ConfigError) as error:
        next(records)
    assert str(error.value) == f"{path}: not UTF-8 text (byte 0xff at offset 17)"


def test_a_folder_is_said_to_be_a_folder(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as error:
        read_text(tmp_path, "cost-model profile")
    assert str(error.value) == f"{tmp_path}: is a directory, not a cost-model profile"


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k=v.yaml").write_text(yaml.safe_dump(tiny_scenario(duration_s=1.0)))
    (tmp_path / "bad.jsonl").write_bytes(b"\xff\n")
    (tmp_path / "dir.yaml").mkdir()
    return tmp_path


def test_a_file_named_like_an_override_is_the_scenario(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was "config field 'k': unknown field"."""
    assert main(["sim", "k=v.yaml", "seed=3", *QUIET, "--out", "run"]) == 0
    assert yaml.safe_load((in_tmp / "run" / "scenario.yaml").read_text())["seed"] == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["dir.yaml"], "dir.yaml: is a directory, not a file"),
        (["."], ".: is a directory, not a file"),
        (
            ["k=v.yaml", "workload={kind: trace, trace: bad.jsonl}"],
            "config field 'workload.trace': bad.jsonl: not UTF-8 text (byte 0xff at offset 0)",
        ),
        (
            ["k=v.yaml", "duration_s=[1"],
            "override 'duration_s=[1': cannot parse the value: expected ',' or ']', "
            "but got '<stream end>'",
        ),
    ],
)
def test_sim_says_what_is_wrong_with_a_file_or_override_in_one_line(
    in_tmp: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert main(["sim", *args, *QUIET, "--out", "run"]) == 2
    assert capsys.readouterr().err == f"edgespec sim: {message}\n"
    assert not os.path.exists(in_tmp / "run" / "metrics.json")
