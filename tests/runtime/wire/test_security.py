"""Security: auth tokens, TLS (and its configuration mistakes), sessions owned by the
client that opened them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import grpc
import pytest

from edgespec.config import from_dict
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.drafter import DraftOptions, generate
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.wire.codec import pb
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.grpc_common import pb_grpc
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.bad_cases import GREEDY, PROMPT, raises_request_error
from tests.runtime.conftest import ServerFactory


def test_auth_tokens(make_server: ServerFactory) -> None:
    server = make_server(auth_tokens=["alpha-secret", "beta-secret"])
    address = f"127.0.0.1:{server.port}"
    spec = SessionSpec("a", "x", PROMPT, GREEDY)
    raises_request_error(
        ErrorCode.UNAUTHENTICATED, "missing auth token", RemoteVerifier(address).open, spec
    )
    raises_request_error(
        ErrorCode.UNAUTHENTICATED,
        "invalid auth token",
        RemoteVerifier(address, auth_token="wrong").open,
        spec,
    )
    raises_request_error(
        ErrorCode.UNAUTHENTICATED, "missing auth token", RemoteVerifier(address).stats
    )
    for token in ("alpha-secret", "beta-secret"):  # per-client tokens
        verifier = RemoteVerifier(address, auth_token=token)
        result = generate(verifier, NgramDrafter(), PROMPT, GREEDY, DraftOptions(f"s-{token}"))
        assert len(result.output_token_ids) == 20
    stub = pb_grpc.VerificationStub(grpc.insecure_channel(address))
    with pytest.raises(grpc.RpcError) as info:  # the token without its scheme
        stub.Stats(pb.StatsRequest(), metadata=(("authorization", "alpha-secret"),))
    assert (info.value.code(), info.value.details()) == (
        grpc.StatusCode.UNAUTHENTICATED,
        "authorization metadata must be 'Bearer <token>'",
    )
    for scheme in ("bearer", "BEARER"):  # refused before: a scheme is case-insensitive
        stub.Stats(pb.StatsRequest(), metadata=(("authorization", f"{scheme} alpha-secret"),))
    twice = (("authorization", "Bearer wrong"), ("authorization", "Bearer alpha-secret"))
    with pytest.raises(grpc.RpcError) as info:  # the last one was taken
        stub.Stats(pb.StatsRequest(), metadata=twice)
    assert (info.value.code(), info.value.details()) == (
        grpc.StatusCode.UNAUTHENTICATED,
        "authorization metadata given 2 times; give it once",
    )


def test_an_empty_auth_token_is_a_config_error_not_open_access() -> None:
    from edgespec.config import ConfigError

    with pytest.raises(ConfigError, match=r"auth_tokens\[0\].*is empty"):
        from_dict(ServerConfig, {"auth_tokens": [""]})


def test_sessions_belong_to_the_client_that_opened_them(
    make_server: ServerFactory, target: TransformersTarget
) -> None:
    server = make_server(auth_tokens=["alpha-secret", "beta-secret"])
    address = f"127.0.0.1:{server.port}"
    alice = RemoteVerifier(address, auth_token="alpha-secret")
    mallory = RemoteVerifier(address, auth_token="beta-secret")
    denied = "session 'a' belongs to another client"

    class Interfering:
        """Alice's verifier; before each of her rounds Mallory tries her session."""

        def open(self, spec: SessionSpec) -> None:
            alice.open(spec)

        def verify(self, call: VerifyCall) -> Any:
            raises_request_error(ErrorCode.PERMISSION_DENIED, denied, mallory.verify, call)
            raises_request_error(
                ErrorCode.PERMISSION_DENIED, denied, mallory.close, call.session_id
            )
            return alice.verify(call)

        def close(self, session_id: str) -> None:
            alice.close(session_id)

    result = generate(Interfering(), NgramDrafter(), PROMPT, GREEDY, DraftOptions("a"))
    assert result.output_token_ids == target_greedy_decode(target, PROMPT, 20)


def _self_signed(tmp_path: Path) -> tuple[Path, Path]:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    try:
        from cryptography import x509  # noqa: F401
    except ImportError:
        if shutil.which("openssl") is None:
            pytest.skip(
                "TLS test needs the `cryptography` package or the openssl CLI; neither found"
            )
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "1",
                "-subj",
                "/CN=localhost",
                "-addext",
                "subjectAltName=DNS:localhost,IP:127.0.0.1",
                "-keyout",
                str(key),
                "-out",
                str(cert),
            ],
            check=True,
            capture_output=True,
        )
        return cert, key
    return _cryptography_cert(cert, key)


def _cryptography_cert(cert_path: Path, key_path: Path) -> tuple[Path, Path]:
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def test_tls(make_server: ServerFactory, tmp_path: Path, target: TransformersTarget) -> None:
    cert, key = _self_signed(tmp_path)
    server = make_server(tls_cert=str(cert), tls_key=str(key))
    address = f"127.0.0.1:{server.port}"
    secure = RemoteVerifier(address, tls_ca=str(cert), tls_server_name="localhost", timeout_s=5)
    result = generate(secure, NgramDrafter(), PROMPT, GREEDY, DraftOptions("tls"))
    assert result.output_token_ids == target_greedy_decode(target, PROMPT, 20)
    plaintext = RemoteVerifier(address, timeout_s=2)
    with pytest.raises(RequestError) as info:
        plaintext.health()
    assert info.value.code is ErrorCode.FAILED_PRECONDITION  # not retried: it speaks TLS
    assert "speaks TLS and this client connects in plaintext: give --tls-ca" in str(info.value)


def test_tls_mistakes_name_the_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from edgespec.config import ConfigError
    from edgespec.runtime.server.config import check_tls_pair

    cert, key = _self_signed(tmp_path)
    check_tls_pair(str(cert), str(key))  # the right pair passes
    (other := tmp_path / "other").mkdir()
    _, other_key = _self_signed(other)
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")
    for bad_cert, bad_key in ((garbage, key), (key, cert), (cert, other_key)):
        with pytest.raises(ConfigError) as info:
            check_tls_pair(str(bad_cert), str(bad_key))
        assert f"tls_cert {bad_cert} and tls_key {bad_key} are not a PEM certificate" in str(
            info.value
        )
    with pytest.raises(ConfigError, match="missing.pem does not exist"):
        check_tls_pair(str(tmp_path / "missing.pem"), str(key))
    from edgespec.cli import main

    # edgespec serve says so before loading any model, and exits 2, naming the flags (was
    # "--tls-cert: tls_cert ... and tls_key ...": the fields' names)
    args = ["serve", "--target", "no-such-model", "--tls-cert", str(garbage)]
    assert main([*args, "--tls-key", str(key)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(
        f"edgespec serve: --tls-cert {garbage} and --tls-key {key} are not a PEM certificate "
        "and its matching private key ("
    )


def test_health_can_require_auth(make_server: ServerFactory) -> None:
    server = make_server(auth_tokens=["alpha-secret"], health_requires_auth=True)
    address = f"127.0.0.1:{server.port}"
    raises_request_error(
        ErrorCode.UNAUTHENTICATED, "missing auth token", RemoteVerifier(address).health
    )
    assert RemoteVerifier(address, auth_token="alpha-secret").health()
    open_server = make_server(auth_tokens=["alpha-secret"])  # the default: Health is public
    assert RemoteVerifier(f"127.0.0.1:{open_server.port}").health()


def _fused_generate(address: str, token: str, session_id: str, client_id: str = "m") -> Any:
    """A fused-mode Generate for ``session_id`` with ``token``, read to its end."""
    from edgespec.runtime.messages import PROTOCOL_VERSION

    session = pb.OpenSessionRequest(
        protocol_version=PROTOCOL_VERSION,
        session_id=session_id,
        client_id=client_id,
        prompt_token_ids=list(PROMPT),
        sampling=pb.Sampling(max_new_tokens=4),
    )
    request = pb.GenerateRequest(session=session, mode=pb.MODE_FUSED, gamma=2)
    stub = pb_grpc.VerificationStub(grpc.insecure_channel(address))
    return list(stub.Generate(request, metadata=(("authorization", f"Bearer {token}"),)))


@pytest.mark.parametrize("fused_rounds", ["colocated", "cloud_only"])
def test_a_fused_generate_with_a_taken_session_id_leaves_that_session_open(
    make_server: ServerFactory, fused_rounds: str
) -> None:
    server = make_server(auth_tokens=["alpha-secret", "beta-secret"], fused_rounds=fused_rounds)
    address = f"127.0.0.1:{server.port}"
    alice = RemoteVerifier(address, auth_token="alpha-secret")
    alice.open(SessionSpec("victim", "x", PROMPT, GREEDY))
    with pytest.raises(grpc.RpcError) as info:
        _fused_generate(address, "beta-secret", "victim")
    assert (info.value.code(), info.value.details()) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "session 'victim' already exists",
    )
    reply = alice.verify(VerifyCall("victim", len(PROMPT), (1, 2)))  # still Alice's
    assert reply.outcome.result.num_drafted == 2
    stub = pb_grpc.VerificationStub(grpc.insecure_channel(address))
    closed = stub.CloseSession(
        pb.CloseSessionRequest(session_id="victim"),
        metadata=(("authorization", "Bearer alpha-secret"),),
    )
    assert closed.existed


def test_a_fused_generate_counts_against_its_callers_session_limit(
    make_server: ServerFactory,
) -> None:
    server = make_server(auth_tokens=["alpha-secret"], max_sessions_per_client=1)
    address = f"127.0.0.1:{server.port}"
    RemoteVerifier(address, auth_token="alpha-secret").open(SessionSpec("one", "x", PROMPT, GREEDY))
    with pytest.raises(grpc.RpcError) as info:  # another client_id, the same token
        _fused_generate(address, "alpha-secret", "two", client_id="y")
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "max_sessions_per_client" in (info.value.details() or "")
