"""A Ray ``--address`` that accepts TCP but is no Ray cluster (a web server, a silent or a
closing port) is refused within the check's bound, as one line, before ``ray.init`` (which
retried it without end: ``edgespec sim --sweep ... --engine ray --address`` of a web server
ran past 120 s); an error ``ray.init`` raises joining a cluster is one line naming the
address. Local TCP servers stand in; no Ray is started."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgespec.cli import main
from edgespec.errors import UserInputError
from edgespec.sweeps import ray_executor
from edgespec.sweeps.ray_executor import HTTP2_PREFACE, RaySweepExecutor, check_address, tls_asked
from tests.sim.helpers import tiny_scenario
from tests.sweeps.executors import FakeRay

SETTINGS = bytes.fromhex("000000040000000000")  # an empty SETTINGS frame, as gRPC sends
ADVICE = "start one (ray start --head) or leave --address out for a local Ray"


@contextmanager
def serving(answer: Callable[[socket.socket], None], hold: bool) -> Iterator[str]:
    """A TCP server on 127.0.0.1 that runs ``answer`` on its first connection, then keeps
    it open (``hold``) or closes it; its ``host:port``."""
    done = threading.Event()
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(10.0)

        def serve() -> None:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                answer(conn)
                if hold:
                    done.wait(10.0)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        try:
            yield f"127.0.0.1:{listener.getsockname()[1]}"
        finally:
            done.set()
            thread.join(15.0)


def _read_preface(conn: socket.socket) -> None:
    got = b""
    while len(got) < len(HTTP2_PREFACE) and (chunk := conn.recv(64)):
        got += chunk


def _grpc_like(conn: socket.socket) -> None:
    _read_preface(conn)
    conn.sendall(SETTINGS)


class _Quiet(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return None


@contextmanager
def web_server() -> Iterator[str]:
    """``python3 -m http.server``'s server (its request log off), in a thread."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _refusal(address: str, timeout_s: float = 5.0) -> tuple[str, float]:
    started = time.monotonic()
    with pytest.raises(UserInputError) as error:
        check_address(address, timeout_s)
    return str(error.value), time.monotonic() - started


def test_a_web_server_is_not_a_ray_cluster() -> None:
    with web_server() as address:
        message, _ = _refusal(address)
    assert message == (
        f"--address {address}: not a Ray cluster (it answered b'<!DOCTYPE' to a gRPC (HTTP/2) "
        f"handshake; Ray's GCS answers with a SETTINGS frame); {ADVICE}"
    )


def test_a_silent_server_is_refused_within_the_bound() -> None:
    with serving(lambda conn: None, hold=True) as address:
        message, took_s = _refusal(address, 0.5)
    assert message == (
        f"--address {address}: not a Ray cluster (no answer to a gRPC (HTTP/2) handshake "
        f"within 0.5 s); {ADVICE}"
    )
    assert 0.4 < took_s < 2.0


def test_a_server_that_closes_at_the_handshake_is_refused() -> None:
    with serving(_read_preface, hold=False) as address:
        message, _ = _refusal(address)
    assert message == (
        f"--address {address}: not a Ray cluster (it closed the connection at a gRPC "
        f"(HTTP/2) handshake); {ADVICE}"
    )


def test_a_grpc_server_passes_and_tls_gets_the_connect_alone() -> None:
    with serving(_grpc_like, hold=True) as address:
        check_address(address, 2.0)
    with serving(_grpc_like, hold=True) as address:  # a server answers one connection
        check_address(f"ray://{address}", 2.0)
    with web_server() as address:
        check_address(address, 2.0, tls=True)  # a TLS handshake is not HTTP/2's
    assert [tls_asked({"RAY_USE_TLS": v}) for v in ("1", "True", "0", "")] == [
        True, True, False, False
    ]  # fmt: skip
    assert not tls_asked({})


def test_a_connection_error_of_ray_init_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    class Refusing(FakeRay):
        def init(self, **options: Any) -> None:
            raise ConnectionError("Could not find any running Ray instance.\n  more detail")

    monkeypatch.setattr(ray_executor, "_ray", Refusing)
    with serving(_grpc_like, hold=True) as address, pytest.raises(UserInputError) as error:
        list(RaySweepExecutor(address, 2).map_unordered(abs, [1]))
    assert str(error.value) == (
        f"--address {address}: Ray could not join the cluster: Could not find any running "
        "Ray instance."
    )


def test_sim_sweep_at_a_web_server_exits_2_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeRay()
    monkeypatch.setattr(ray_executor, "_ray", lambda: fake)
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_scenario(duration_s=2.0)))
    out = tmp_path / "out"
    started = time.monotonic()
    with web_server() as address:
        args = ["--sweep", "seed=1,2", "--engine", "ray", "--address", address]
        assert main(["sim", str(path), *args, "--out", str(out), "--quiet"]) == 2
    assert time.monotonic() - started < 10.0
    assert capsys.readouterr().err == (
        f"edgespec sim: --address {address}: not a Ray cluster (it answered b'<!DOCTYPE' to "
        f"a gRPC (HTTP/2) handshake; Ray's GCS answers with a SETTINGS frame); {ADVICE}\n"
    )
    assert fake.inits == [] and not out.exists()
