"""``--tls-ca`` (``drafting-server``, ``draft``, ``bench serve``) is a file to read, checked
as the flags are parsed: a path that is missing, a folder or unreadable is argparse's usage
error naming the flag (exit 2). gRPC's client opened it raw once the command ran:
``edgespec drafting-server: [Errno 2] No such file or directory: '/nonexistent.pem'``, a
folder ``/tmp: Is a directory``. ``draft``'s config file's ``tls_ca`` is held to the same
rule (:func:`edgespec.argument_types.readable_file_problem`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.config import ConfigError, from_dict
from edgespec.runtime.edge.config import DrafterConfig

COMMANDS = {
    "drafting-server": ["drafting-server", "--server", "127.0.0.1:1", "--draft", "somewhere"],
    "draft": ["draft", "--server", "127.0.0.1:1", "--prompt-ids", "1"],
    "bench serve": ["bench", "serve", "--server", "127.0.0.1:1"],
}


def _cases(tmp_path: Path) -> list[tuple[str, str]]:
    """(the --tls-ca given, what is wrong with it)."""
    unreadable = tmp_path / "locked.pem"
    unreadable.write_text("")
    unreadable.chmod(0)
    cases = [("/nonexistent.pem", "/nonexistent.pem: no such file"),
             (str(tmp_path), f"{tmp_path}: is a folder, not a file"),
             ("", "expected a file name, got ''")]  # fmt: skip
    if not os.access(unreadable, os.R_OK):  # root reads it anyway
        cases.append((str(unreadable), f"{unreadable}: cannot be read (permission denied)"))
    return cases


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_tls_ca_that_is_no_readable_file_is_a_usage_error_naming_the_flag(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for given, why in _cases(tmp_path):
        with pytest.raises(SystemExit) as stop:
            main([*COMMANDS[command], "--tls-ca", given])
        assert stop.value.code == 2
        assert capsys.readouterr().err.splitlines()[-1] == (
            f"edgespec {command}: error: argument --tls-ca: {why}"
        )


def test_a_config_files_tls_ca_is_checked_as_the_flag_is(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        from_dict(DrafterConfig, {"tls_ca": str(tmp_path)})
    assert str(info.value) == f"config field 'tls_ca': {tmp_path}: is a folder, not a file"
    ca = tmp_path / "ca.pem"
    ca.write_text("")
    assert from_dict(DrafterConfig, {"tls_ca": str(ca)}).tls_ca == str(ca)
