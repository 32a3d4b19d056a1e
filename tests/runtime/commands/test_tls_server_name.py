"""``--tls-server-name`` of ``edgespec draft`` (and its config's ``tls_server_name``) and
``edgespec drafting-server``: a server whose certificate names only a DNS name, reached by
127.0.0.1, is verified against that name (without it the handshake fails, said so in one
line); the name is checked as it is read (one rule with ``bench serve``'s flag) and
refused without ``--tls-ca`` (by ``bench serve`` too), whose absence made the connection
plaintext."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.config import ConfigError
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.wire.inprocess import target_greedy_decode
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.conftest import ServerFactory
from tests.runtime.tls_certs import CertPair, make_ca, make_server_cert

NAME = "edgespec.test"
PROMPT = (3, 17, 42, 8, 9)
IDS = ",".join(map(str, PROMPT))
NEEDS_CA = "names the server's TLS certificate: needs --tls-ca (TLS; without it, plaintext)"
HINT = (
    "Hostname Verification Check failed. (the server's certificate does not name the host it "
    "was checked for (--tls-server-name if given, else the host in --server): give a name it "
    "holds with --tls-server-name)"
)
DRAFT = ["draft", "--server", "127.0.0.1:1", "--draft", "ngram", "--prompt-ids", IDS]
BAD_NAME = "expected a host name (letters, digits, '-' and '.'), got 'bad name'"


def _tokens(out: str) -> tuple[int, ...]:
    """The tokens ``draft --prompt-ids`` printed: its first line, each round's as a list."""
    return tuple(int(token) for token in re.findall(r"\d+", out.splitlines()[0]))


@pytest.fixture
def named_server(make_server: ServerFactory, tmp_path: Path) -> tuple[ServerThread, CertPair]:
    """A TLS server whose certificate names only :data:`NAME`, and its CA."""
    ca = make_ca(tmp_path, "ca")
    served = make_server_cert(tmp_path, ca, f"DNS:{NAME}")
    return make_server(tls_cert=str(served.cert), tls_key=str(served.key)), ca


def test_draft_reaches_a_server_by_ip_with_the_name_its_certificate_holds(
    named_server: tuple[ServerThread, CertPair], target: TransformersTarget,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    server, ca = named_server
    cli = ["draft", "--server", f"127.0.0.1:{server.port}", "--draft", "ngram",
           "--prompt-ids", IDS, "--max-new-tokens", "8", "--tls-ca", str(ca.cert)]  # fmt: skip
    assert main(cli) == 1
    out, err = capsys.readouterr()
    last = err.splitlines()[-1]
    assert out == "" and last.startswith("edgespec draft: UNAVAILABLE: failed to connect to all ")
    assert last.endswith(HINT)
    assert main([*cli, "--tls-server-name", "other.test"]) == 1  # a name it does not hold
    last = capsys.readouterr().err.splitlines()[-1]  # (it said "the host in --server")
    assert last.startswith("edgespec draft: UNAVAILABLE: ") and last.endswith(HINT)
    assert main([*cli, "--tls-server-name", NAME]) == 0
    out, _ = capsys.readouterr()
    assert _tokens(out) == target_greedy_decode(target, PROMPT, 8)


def test_the_config_key_names_the_certificate_too(
    named_server: tuple[ServerThread, CertPair], target: TransformersTarget, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    server, ca = named_server
    config = tmp_path / "drafter.yaml"
    config.write_text(f"server: 127.0.0.1:{server.port}\ntls_ca: {ca.cert}\n"
                      f"tls_server_name: {NAME}\nmax_new_tokens: 8\n")  # fmt: skip
    assert main(["draft", "--config", str(config), "--draft", "ngram", "--prompt-ids", IDS]) == 0
    assert _tokens(capsys.readouterr().out) == target_greedy_decode(target, PROMPT, 8)


def test_draft_refuses_the_name_without_a_ca(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*DRAFT, "--tls-server-name", NAME]) == 2
    assert capsys.readouterr().err == f"edgespec draft: --tls-server-name: {NEEDS_CA}\n"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("bad name", BAD_NAME),
        ("", "expected a host name (letters, digits, '-' and '.'), got ''"),
        ("a" * 254, "must be at most 253 characters, got 254"),
        ("edgespec.test:50051",
         "expected a host name (letters, digits, '-' and '.'), got 'edgespec.test:50051'"),
        ("edgespec.test\n", "expected a host name (letters, digits, '-' and '.'), got "
         "'edgespec.test\\n'"),
    ],
)  # fmt: skip
def test_draft_refuses_a_bad_name_as_the_flags_are_parsed(
    name: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*DRAFT, "--tls-server-name", name])
    assert exited.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last == f"edgespec draft: error: argument --tls-server-name: {message}"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"tls_server_name": NAME}, f"config field 'tls_server_name': "
         f"{NEEDS_CA.replace('--tls-ca', 'tls_ca')}"),
        ({"tls_server_name": "bad name"}, f"config field 'tls_server_name': {BAD_NAME}"),
    ],
)  # fmt: skip
def test_the_config_field_is_checked_as_the_flag(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        DrafterConfig(**fields).validate()
    assert str(info.value) == message


def test_drafting_server_refuses_the_name_without_a_ca(capsys: pytest.CaptureFixture[str]) -> None:
    cli = ["drafting-server", "--server", "127.0.0.1:1", "--draft", "somewhere"]
    assert main([*cli, "--tls-server-name", NAME]) == 2
    assert capsys.readouterr().err == f"edgespec drafting-server: --tls-server-name: {NEEDS_CA}\n"


def test_bench_serve_refuses_the_name_without_a_ca(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As ``draft`` and ``drafting-server`` (it was ignored, the run plaintext), before any
    process starts."""
    from edgespec.runtime.loadgen import session

    def no_session(*args: object) -> None:
        raise AssertionError("the bench started")

    monkeypatch.setattr(session, "BenchSession", no_session)
    cli = ["bench", "serve", "--server", "127.0.0.1:1", "--tls-server-name", NAME]
    assert main(cli) == 2
    assert capsys.readouterr().err == f"edgespec bench serve: --tls-server-name: {NEEDS_CA}\n"


def test_drafting_server_reaches_a_server_by_ip_with_the_name(
    named_server: tuple[ServerThread, CertPair], model_dir: Path,
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    server, ca = named_server
    out = tmp_path / "run.json"
    cli = ["drafting-server", "--server", f"127.0.0.1:{server.port}", "--draft", str(model_dir),
           "--prompt-ids", IDS, "--max-new-tokens", "6", "--batch-size", "1", "--no-pipeline",
           "--tls-ca", str(ca.cert), "--timeout-s", "5", "--json", str(out)]  # fmt: skip
    assert main(cli) == 1
    assert capsys.readouterr().err.splitlines()[-1].endswith(HINT)
    assert main([*cli, "--tls-server-name", NAME]) == 0
    run = json.loads(out.read_text())["runs"]["not_pipelined"]
    assert (run["num_output_tokens"], run["num_rounds"]) == (6, 2)  # its target as its draft


def test_every_server_of_a_drafter_is_reached_by_the_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each ``--server`` of a routed draft and of the endpoint (whose routing, health probes
    and reconnects use these clients) is made with the name."""
    from edgespec.runtime.wire import grpc_client
    from edgespec.runtime.wire.drafter_clients import drafter_clients

    made: list[tuple[Any, ...]] = []
    monkeypatch.setattr(grpc_client, "RemoteVerifier", lambda *args: made.append(args))
    ca = str(make_ca(tmp_path, "ca").cert)
    config = DrafterConfig(server="10.0.0.7:1,10.0.0.8:2", tls_ca=ca, tls_server_name=NAME)
    drafter_clients(config)
    assert [(m[0], m[2], m[5]) for m in made] == [
        ("10.0.0.7:1", ca, NAME),
        ("10.0.0.8:2", ca, NAME),
    ]


@pytest.mark.parametrize(
    ("cli", "prog"),
    [
        (["drafting-server", "--server", "127.0.0.1:1", "--draft", "x"], "drafting-server"),
        (["bench", "serve", "--server", "127.0.0.1:1"], "bench serve"),
    ],
)
def test_one_rule_for_the_name_in_every_command(
    cli: list[str], prog: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*cli, "--tls-server-name", "bad name"])
    assert exited.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last == f"edgespec {prog}: error: argument --tls-server-name: {BAD_NAME}"
