"""A scenario file that is a symlink leading nowhere is said to be one, naming the file as
given (it was ``file not found``, as if nothing were there): a loop, in the file's own link
or in a folder's, and a link to a missing file. A bundled name still wins over a broken link
of that name in the working folder, as it wins over no file."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.config import ConfigFileError
from edgespec.config.scenario_files import bundled_scenarios_dir, scenario_path

LOOP = f"symlink loop ({os.strerror(errno.ELOOP)})"  # "Too many levels of symbolic links"


def test_a_symlink_loop_is_named_as_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("loop.yaml").symlink_to("loop.yaml")
    with pytest.raises(ConfigFileError) as caught:
        scenario_path("loop.yaml")
    assert str(caught.value) == f"loop.yaml: {LOOP}"
    assert main(["sim", "./loop.yaml", "--quiet", "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == f"edgespec sim: ./loop.yaml: {LOOP}"
    assert not (tmp_path / "o").exists()


def test_a_loop_in_a_folder_of_the_path_is_named_as_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("a").symlink_to("b")
    Path("b").symlink_to("a")
    with pytest.raises(ConfigFileError) as caught:
        scenario_path("a/x.yaml")
    assert str(caught.value) == f"a/x.yaml: {LOOP}"


def test_a_link_to_a_missing_file_names_its_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("s.yaml").symlink_to("gone.yaml")
    with pytest.raises(ConfigFileError) as caught:
        scenario_path("s.yaml")
    assert str(caught.value) == "s.yaml: symlink to 'gone.yaml', which does not exist"


def test_no_file_is_still_not_found_and_a_bundled_name_still_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigFileError) as caught:
        scenario_path("none.yaml")
    assert str(caught.value) == "none.yaml: file not found"
    Path("default").symlink_to("default")
    assert scenario_path("default") == bundled_scenarios_dir() / "default.yaml"
