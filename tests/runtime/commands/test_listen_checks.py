"""Every address a command listens on is checked before anything slow happens: a port in
use or a host it cannot bind is one line naming the address and the reason, exit status 2,
before a server is reached or a model loads (the model names here do not exist, so a check
that came after loading would fail on them instead)."""

from __future__ import annotations

import pytest

from edgespec.cli import main


def _serve(host: str, port: int, *extra: str) -> list[str]:
    return ["serve", "--target", "no-such-model", "--host", host, "--port", str(port), *extra]


def _draft(address: str) -> list[str]:
    # no server at 127.0.0.1:1: reaching it first would be exit 1, UNAVAILABLE
    return ["draft", "--server", "127.0.0.1:1", "--draft", "no-such-model",
            "--serve-openai", address]  # fmt: skip


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_serve_refuses_a_host_it_cannot_bind_even_on_port_0(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(_serve("256.1.1.1", 0)) == 2
    assert _one_line(capsys).startswith("edgespec serve: cannot listen on 256.1.1.1:0: ")


def test_serve_refuses_a_prometheus_port_in_use_before_its_model(
    listener: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_serve("127.0.0.1", 0, "--prometheus-port", str(listener))) == 2
    assert _one_line(capsys) == (
        f"edgespec serve: --prometheus-port {listener}: port in use (on 127.0.0.1)\n"
    )


def test_draft_serve_openai_refuses_a_port_in_use_before_anything(
    listener: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_draft(f"127.0.0.1:{listener}")) == 2
    assert _one_line(capsys) == f"edgespec draft: port {listener} is in use (on 127.0.0.1)\n"


def test_draft_serve_openai_refuses_a_host_it_cannot_bind(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(_draft("256.1.1.1:8000")) == 2
    assert _one_line(capsys).startswith("edgespec draft: cannot listen on 256.1.1.1:8000: ")
