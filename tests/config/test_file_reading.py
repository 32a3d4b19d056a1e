"""How config files are read (edgespec.config.files), from Python and from ``edgespec
sim``: text that is not UTF-8 and a folder are one-line errors naming the file; a file
named like an override (``k=v.yaml``) is a scenario file; an override that does not parse
is quoted as typed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgespec.cli import main
from edgespec.config import ConfigError, files, read_jsonl, read_text, read_yaml
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
    assert next(records) == (f"{path}:1", {"a": 1})
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


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The byte counts each ``read``/``readline`` of a file opened by ``Path.open`` returned."""
    got: list[int] = []
    real_open = Path.open

    class Spy:
        def __init__(self, fh: Any) -> None:
            self.fh = fh

        def __enter__(self) -> Spy:
            return self

        def __exit__(self, *exc: object) -> None:
            self.fh.close()

        def read(self, size: int = -1) -> bytes:
            got.append(len(data := self.fh.read(size)))
            return data  # type: ignore[no-any-return]

        def readline(self, size: int = -1) -> bytes:
            got.append(len(data := self.fh.readline(size)))
            return data  # type: ignore[no-any-return]

    monkeypatch.setattr(Path, "open", lambda self, *a, **k: Spy(real_open(self, *a, **k)))
    return got


def test_a_yaml_file_over_the_limit_is_refused_while_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Was read whole, however large."""
    monkeypatch.setattr(files, "MAX_YAML_BYTES", 16)
    fits, big = tmp_path / "fits.yaml", tmp_path / "big.yaml"
    fits.write_text("a: 1\nb: 22222222")  # 16 bytes
    big.write_text("a: 1\n" + "b: 2\n" * 100_000)
    assert read_yaml(fits) == {"a": 1, "b": 22222222}
    reads = _reads(monkeypatch)
    with pytest.raises(ConfigError) as error:
        read_yaml(big)
    assert str(error.value) == f"{big}: larger than 16 bytes, the limit for a YAML file"
    assert sum(reads) == 17
    assert files.MAX_YAML_BYTES == 16 and files._size(64 * 2**20) == "64 MiB"


def test_sim_refuses_a_scenario_over_the_limit_in_one_line(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(files, "MAX_YAML_BYTES", 64)
    assert main(["sim", "k=v.yaml", *QUIET, "--out", "run"]) == 2
    assert capsys.readouterr().err == (
        "edgespec sim: k=v.yaml: larger than 64 bytes, the limit for a YAML file\n"
    )


def test_a_jsonl_line_over_the_limit_is_refused_naming_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Was read whole, however long; a line of exactly the limit (its newline not counted)
    is read, at the end of the file too."""
    monkeypatch.setattr(files, "MAX_JSONL_LINE_BYTES", 16)
    path, fits = tmp_path / "t.jsonl", tmp_path / "fits.jsonl"
    path.write_bytes(b'{"a": 123456789}\n{"b": 12345678}\n{"c": 1234567890}' + b" " * 10**6)
    fits.write_bytes(b'{"b": 12345678}\n{"a": 123456789}')
    assert [obj for _, obj in read_jsonl(fits)] == [{"b": 12345678}, {"a": 123456789}]
    reads = _reads(monkeypatch)
    records = read_jsonl(path, "trace file")
    assert next(records) == (f"{path}:1", {"a": 123456789})
    assert next(records) == (f"{path}:2", {"b": 12345678})
    with pytest.raises(ConfigError) as error:
        next(records)
    assert str(error.value) == f"{path}:3: line longer than 16 bytes, the limit for a JSONL line"
    assert reads == [17, 16, 17]


def test_a_text_file_over_the_limit_is_refused_while_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Was read whole, however large (reject-share tables, latency samples, weights)."""
    monkeypatch.setattr(files, "MAX_TEXT_BYTES", 16)
    fits, big = tmp_path / "fits.json", tmp_path / "big.json"
    fits.write_text('{"a": 123456789}')  # 16 bytes
    big.write_text("[" + "1, " * 1_000_000 + "1]")
    assert read_text(fits) == '{"a": 123456789}'
    reads = _reads(monkeypatch)
    with pytest.raises(ConfigError) as error:
        read_text(big, "agreement table")
    assert str(error.value) == f"{big}: larger than 16 bytes, the limit for an agreement table"
    assert sum(reads) == 17
    with pytest.raises(ConfigError) as error:
        read_text(fits, "samples file", max_bytes=15)
    assert str(error.value) == f"{fits}: larger than 15 bytes, the limit for a samples file"
    assert read_text(big, max_bytes=4 * 10**6).startswith("[1, 1, ")


def test_the_text_limit_is_256_mib() -> None:
    assert files.MAX_TEXT_BYTES == 256 * 2**20 and files._size(files.MAX_TEXT_BYTES) == "256 MiB"
