"""``--tls-ca`` (``drafting-server``, ``draft``, ``bench serve``) is a file of PEM
certificates, checked as the flags are parsed: a path that is missing, a folder or
unreadable, and a file that is empty, too big, a private key or no PEM certificate, is
argparse's usage error naming the flag (exit 2). gRPC's client opened it raw once the
command ran: ``edgespec drafting-server: [Errno 2] No such file or directory:
'/nonexistent.pem'``, a folder ``/tmp: Is a directory``; a key printed gRPC's own log lines
(``Could not load any root certificate``), then ``UNAVAILABLE: ... Failed to create security
handshaker`` with a hint to start a server; an empty file trusted the system's CAs. ``draft``'s
config file's ``tls_ca`` is held to the same rule
(:func:`edgespec.server_access_types.ca_file_problem`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.config import ConfigError, from_dict
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.server_access_types import MAX_CA_FILE_BYTES
from tests.runtime.tls_certs import make_ca

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


def _content_cases(tmp_path: Path) -> list[tuple[str, str]]:
    """(a --tls-ca file that is there to read but no CA certificates, what is wrong)."""
    ca = make_ca(tmp_path, "ca")
    pem = ca.cert.read_text()
    files = {
        "empty.pem": ("", "is empty"),
        "big.pem": (pem * (MAX_CA_FILE_BYTES // len(pem) + 1),
                    "is over 1,048,576 bytes, too big for CA certificates"),
        "both.pem": (ca.key.read_text() + pem, "holds a private key besides a certificate "
                     "(keep only the certificate: the file goes to every device)"),
        "notes.txt": ("trust me\n", "holds no PEM certificate (no '-----BEGIN CERTIFICATE-----' "
                      "line)"),
        "cut.pem": (pem[:200] + "\n-----END CERTIFICATE-----\n", "holds a '-----BEGIN "
                    "CERTIFICATE-----' block that does not parse as a certificate"),
    }  # fmt: skip
    for name, (text, _) in files.items():
        (tmp_path / name).write_text(text)
    key_why = "holds a private key, not a certificate (give the CA's certificate, e.g. ca.pem)"
    return [(str(ca.key), f"{ca.key}: {key_why}")] + [
        (str(tmp_path / name), f"{tmp_path / name}: {why}") for name, (_, why) in files.items()
    ]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_tls_ca_that_holds_no_ca_certificates_is_a_usage_error_naming_the_flag(
    command: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Refused before gRPC sees it: stderr is argparse's usage and the one line, none of
    gRPC's own log lines (``E1201 ... Could not load any root certificate``)."""
    for given, why in _content_cases(tmp_path):
        with pytest.raises(SystemExit) as stop:
            main([*COMMANDS[command], "--tls-ca", given])
        assert stop.value.code == 2
        err = capfd.readouterr().err.splitlines()
        assert err[0].startswith("usage: edgespec ") and "root certificate" not in "".join(err)
        assert err[-1] == f"edgespec {command}: error: argument --tls-ca: {why}"


def test_a_config_files_tls_ca_is_checked_as_the_flag_is(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        from_dict(DrafterConfig, {"tls_ca": str(tmp_path)})
    assert str(info.value) == f"config field 'tls_ca': {tmp_path}: is a folder, not a file"
    ca = make_ca(tmp_path, "ca")
    with pytest.raises(ConfigError) as info:
        from_dict(DrafterConfig, {"tls_ca": str(ca.key)})
    assert str(info.value) == (
        f"config field 'tls_ca': {ca.key}: holds a private key, not a certificate (give the "
        "CA's certificate, e.g. ca.pem)"
    )
    assert from_dict(DrafterConfig, {"tls_ca": str(ca.cert)}).tls_ca == str(ca.cert)
