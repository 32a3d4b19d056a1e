"""The server's gRPC message limit holds as a message arrives: a 64 MiB message (a session
id, from a client process whose own limit allows it) is refused RESOURCE_EXHAUSTED by a
server limited to 4 MiB, and the server's memory does not grow with it."""

from __future__ import annotations

import subprocess
import sys

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from tests.runtime.conftest import start_server
from tests.runtime.memory import peak_rss_bytes, reset_peak, rss_bytes

CLIENT = """
import sys
import grpc
from edgespec.runtime.wire.codec import pb
from edgespec.runtime.wire.grpc_common import pb_grpc
options = [("grpc.max_send_message_length", 1 << 30)]
channel = grpc.insecure_channel(sys.argv[1], options=options)
request = pb.CloseSessionRequest(session_id="x" * (64 << 20))
try:
    pb_grpc.VerificationStub(channel).CloseSession(request, timeout=60)
except grpc.RpcError as exc:
    print(exc.code().name, exc.details())
"""


def test_an_oversized_message_is_refused_memory_flat(target: TransformersTarget) -> None:
    server = start_server(target, host="127.0.0.1", max_message_bytes=4 << 20)
    try:
        reset_peak()
        before = rss_bytes()
        done = subprocess.run([sys.executable, "-c", CLIENT, f"127.0.0.1:{server.port}"],
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        grown = peak_rss_bytes() - before
    finally:
        server.stop(grace_s=0)
    assert done.stdout.startswith("RESOURCE_EXHAUSTED"), done.stdout + done.stderr
    assert "larger than max" in done.stdout and "4194304" in done.stdout
    assert grown < 16 << 20, f"the server's peak memory grew {grown >> 20} MiB"
