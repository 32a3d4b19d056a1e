"""``edgespec bench serve`` end to end, the short version of docs/PERFORMANCE.md's fault run:
the bench starts ``edgespec serve`` on a small synthetic target, kills a client process and
the server mid-run, and still loses no session (a centralized stream goes on after the
restart too); every finished output equals centralized decoding; without faults the
server's Prometheus counters equal what the clients counted. And a request that hangs is
reported lost, not dropped."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgespec.cli import main
from edgespec.runtime.loadgen.run import LoadRun
from edgespec.runtime.loadgen.spec import LoadSpec, ServerAccess, SloShare

SMALL = ["--synthetic-layers", "2", "--synthetic-hidden", "32", "--max-new-tokens", "12",
         "--clients", "4", "--procs", "2"]  # fmt: skip


def _bench(tmp_path: Path, *flags: str) -> tuple[int, dict[str, Any]]:
    out = tmp_path / "bench.json"
    rc = main(["bench", "serve", *SMALL, *flags, "--json", str(out)])
    return rc, json.loads(out.read_text())


def test_faults_lose_nothing_and_every_output_is_centralized(tmp_path: Path) -> None:
    """Penalized requests (greedy): the check's references are penalized alike."""
    rc, data = _bench(tmp_path, "--duration-s", "6", "--session-timeout-s", "1",
                      "--faults", "kill-clients@1,restart-server@3",
                      "--repetition-penalty", "1.5", "--frequency-penalty", "0.5",
                      "--logit-bias", "7:3,5:-100")  # fmt: skip
    (run,) = data["runs"]
    assert run["setup"]["sampling"] == ("greedy, logit_bias 5:-100,7:3, repetition_penalty 1.5, "
                                        "frequency_penalty 0.5")  # fmt: skip
    requests = run["requests"]
    assert rc == 0
    assert requests["lost"] == 0 and requests["lost_ids"] == []
    assert requests["killed"] >= 1  # the killed process had its clients' requests in flight
    assert requests["reconnects"] >= 1  # clients in flight at the restart reopened
    assert requests["finished"] + requests["failed"] + requests["killed"] == requests["started"]
    assert run["errors_by_code"] == {}
    assert run["check"]["num_checked"] == requests["finished"] > 0
    assert run["check"]["num_mismatches"] == 0
    assert [f["kind"] for f in run["faults"]] == ["kill-clients", "restart-server"]
    assert run["faults"][1]["restart_s"] > 0
    assert run["orphaned_sessions"] == 0  # the killed clients' sessions expired
    assert run["agreement"] is None


def test_centralized_requests_go_on_through_a_server_restart(tmp_path: Path) -> None:
    """A centralized stream the restart cut goes on from what it committed (counted as a
    reconnect): none fails, every output equals an uncut stream's."""
    rc, data = _bench(tmp_path, "--mode", "centralized", "--duration-s", "4",
                      "--procs", "1", "--faults", "restart-server@1.5")  # fmt: skip
    (run,) = data["runs"]
    requests = run["requests"]
    assert rc == 0 and run["errors_by_code"] == {}
    assert requests["lost"] == 0 and requests["failed"] == 0
    assert requests["reconnects"] >= 1  # streams in flight at the restart went on
    assert run["check"]["num_checked"] == requests["finished"] > 0
    assert run["check"]["num_mismatches"] == 0


def test_sampled_requests_run_and_are_not_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every request samples as the flags say (its own seed); sampled outputs have no
    centralized reference, so the check is not made, and the bench says so."""
    rc, data = _bench(tmp_path, "--duration-s", "1.5", "--clients", "2", "--procs", "1",
                      "--temperature", "0.8", "--top-k", "5", "--ignore-eos")  # fmt: skip
    (run,) = data["runs"]
    assert rc == 0 and run["errors_by_code"] == {}
    assert run["setup"]["sampling"] == "temperature 0.8, top_k 5, ignore_eos"
    assert run["requests"]["finished"] > 0 and run["check"] is None
    assert run["metrics"]["num_output_tokens"] == 12 * run["requests"]["finished"]
    assert "outputs not checked against centralized decoding: sampled requests" in (
        capsys.readouterr().err
    )


def test_a_request_still_running_after_the_drain_is_lost() -> None:
    with socket.socket() as silent:  # accepts connections, never speaks gRPC
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        load = LoadSpec(1, 1, "closed", None, 0.5, 1.0, (SloShare("default", None, 1.0),), 8,
                        4, "ngram", 0)  # fmt: skip
        outcome = LoadRun(load, ServerAccess(address), ((1, 2, 3),), 64, say=lambda _: None,
                          run_tag="0a1b2c3d").run()  # fmt: skip
    assert outcome.num_started == 1 and not outcome.finished and not outcome.failed
    assert outcome.lost == (
        ("0a1b2c3d.client-000.0.0", "still running 1 s after the arrivals ended"),
    )
    assert outcome.run_tag == "0a1b2c3d" and outcome.never_served == ()


def _secured_server(**settings: Any) -> Any:
    from edgespec.config import from_dict
    from edgespec.policies.batching import FcfsBatching
    from edgespec.runtime.backends.transformers_backend import TransformersTarget
    from edgespec.runtime.server.config import ServerConfig
    from edgespec.runtime.server.engine import VerificationEngine
    from edgespec.runtime.server.service import VerificationService
    from edgespec.runtime.testing import tiny_llama
    from edgespec.runtime.wire.server_thread import ServerThread

    target = TransformersTarget(tiny_llama(0, vocab_size=300, hidden_size=32))  # bytes fit
    config = from_dict(ServerConfig, {"port": 0, "auth_tokens": ["tok-a"], **settings})
    return ServerThread(lambda: VerificationService(VerificationEngine(target), config,
                                                    FcfsBatching()))  # fmt: skip


def test_a_server_of_yours_counters_agree_in_both_modes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Against a running server with auth: both modes finish, every output is centralized, and
    each Prometheus counter's increase equals what the clients counted."""
    from edgespec.runtime.loadgen.server_process import free_port
    from edgespec.runtime.server.prometheus import start_prometheus

    flags = ["--clients", "2", "--procs", "1", "--duration-s", "1.5", "--max-new-tokens", "6"]
    with _secured_server() as server:
        address = f"127.0.0.1:{server.port}"
        metrics_port = free_port()
        http = start_prometheus(metrics_port, server.service.metrics)
        try:
            out = tmp_path / "ok.json"
            rc = main(["bench", "serve", "--server", address, "--auth-token", "tok-a", *flags,
                       "--metrics-url", f"http://127.0.0.1:{metrics_port}/metrics",
                       "--mode", "distributed,centralized", "--json", str(out)])  # fmt: skip
            data = json.loads(out.read_text())
            rc_wrong = main(["bench", "serve", "--server", address, "--auth-token", "tok-b",
                             *flags])  # fmt: skip
        finally:
            http.shutdown()
            http.server_close()
    assert rc == 0
    assert [r["setup"]["mode"] for r in data["runs"]] == ["distributed", "centralized"]
    assert data["runs"][0]["setup"]["slo_mix"] == "default:none:1"  # a server's own classes
    for run in data["runs"]:
        assert run["requests"]["finished"] > 0
        assert run["check"]["num_mismatches"] == 0
        rows = run["agreement"]
        assert {r["metric"] for r in rows} >= {"edgespec_verifications_total",
                                               "edgespec_committed_tokens_total"}  # fmt: skip
        assert all(r["agrees"] for r in rows), rows
        counted = {r["metric"]: r["clients"] for r in rows}
        assert counted["edgespec_committed_tokens_total"] == 6 * run["requests"]["finished"]
    assert data["goodput_ratio"] > 0
    assert rc_wrong == 1
    assert capsys.readouterr().err.strip().endswith("UNAUTHENTICATED: invalid auth token")


def test_a_model_draft_is_what_each_client_process_loads(tmp_path: Path) -> None:
    """``--draft NAME`` goes to the client processes as the model to load; n-gram drafts load
    nothing; ``truncated`` is the synthetic target's copy, known once it is built."""
    from edgespec.cli import build_parser
    from edgespec.runtime.commands.bench_serve import load_spec
    from edgespec.runtime.loadgen.session import BenchSession

    def draft_dir(*flags: str) -> str | None:
        args = build_parser().parse_args(["bench", "serve", *flags])
        session = BenchSession(args, load_spec(args), tmp_path, lambda _: None)
        return session._draft_dir

    assert draft_dir("--draft", "runs/my-draft") == "runs/my-draft"
    assert draft_dir() is None
    assert draft_dir("--draft", "truncated") is None


def test_a_model_draft_loads_in_the_client_process(tmp_path: Path) -> None:
    """``--draft truncated``/a model: each client process loads the draft and drafts with it."""
    from edgespec.runtime.backends.transformers_draft import TransformersDraft
    from edgespec.runtime.loadgen.worker import WorkerSpec, _Client
    from edgespec.runtime.testing import tiny_llama

    tiny_llama(0, vocab_size=300, hidden_size=32).save_pretrained(tmp_path / "draft")
    load = LoadSpec(1, 1, "closed", None, 1.0, 1.0, (SloShare("default", None, 1.0),), 8, 4,
                    "truncated", 0)  # fmt: skip
    spec = WorkerSpec(0, 0, "t", ("c",), ServerAccess("127.0.0.1:1"), ((1, 2),), load, 300,
                      str(tmp_path / "draft"))  # fmt: skip
    drafter = _Client(spec, conn=None).drafter()
    assert isinstance(drafter, TransformersDraft)
    proposal = drafter.propose((1, 2, 3), 3, 0.0, np.random.default_rng(0))
    assert len(proposal.token_ids) == 3


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--server", "127.0.0.1:1", "--faults", "restart-server@5"],
         "--faults restart-server needs the bench's own server (no --server)"),
        (["--auth-token", "t"], "--auth-token is for a --server of yours (the bench's own is "
                                "plaintext)"),
        (["--server", "127.0.0.1:1", "--backend", "llamacpp"],
         "--backend sets the bench's own server (no --server)"),
        (["--top-p", "0.5"], "--top-p: 0.5 does nothing at temperature 0 (greedy): give a "
                             "temperature > 0 to sample with top_p"),
        (["--temperature", "0.7", "--repetition-penalty", "0"],
         "--repetition-penalty: must be in [1.175e-38, 3.403e+38] (float32's normal range; "
         "1: off), got 0"),
        (["--target", "gemma3-270m", "--draft", "truncated"],
         "--draft truncated is the synthetic target's first 2 layers: it needs the bench's own "
         "--target synthetic"),
    ],
)  # fmt: skip
def test_flag_mistakes(flags: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "serve", *flags]) == 2
    assert message in capsys.readouterr().err
