"""``bench serve``'s server-side metrics (verification passes, forwarded tokens, batch sizes,
busy time): the clients cannot count them, so they come from the server's Prometheus
counters over the load, or are ``null`` ("not measured") with the reason; they were 0 in
every run (``throughput_tokens_per_s: 0.0``, ``num_batches: 0``, ``server_utilization:
[0.0]``) while the server ran thousands of verifications. And the bench's own server runs
``--batching wisp`` with ``--profile`` (it exited 2 before it served: the bench had no
``--profile``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.metrics.formatting import plain
from edgespec.runtime.loadgen.outcome import FaultEvent, RunOutcome
from edgespec.runtime.loadgen.scrape import PASSES, ServerFigures, server_figures
from tests.runtime.loadgen.test_bench_serve import SMALL, _secured_server

LOAD = ["--clients", "2", "--procs", "1", "--duration-s", "1.5", "--max-new-tokens", "6",
        "--no-check"]  # fmt: skip
SERVER_SIDE = ("throughput_tokens_per_s", "num_batches", "num_forwarded_tokens",
               "num_cached_tokens", "mean_batch_size", "batch_sizes", "server_busy_s",
               "server_utilization", "mean_server_utilization")  # fmt: skip


def _line(out: str) -> str:
    (line,) = [x for x in out.splitlines() if x.startswith("server passes: ")]
    return line


def test_a_server_of_yours_passes_are_its_counters_over_the_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With ``--no-check`` every pass the server ran was the load's: the JSON holds exactly
    its counters (busy time clipped to the run's span); cached tokens and the batch-size
    histogram, which its page does not give, are ``null``."""
    from edgespec.runtime.loadgen.server_process import free_port
    from edgespec.runtime.server.prometheus import start_prometheus

    out = tmp_path / "passes.json"
    with _secured_server() as server:
        metrics_port = free_port()
        http = start_prometheus(metrics_port, server.service.metrics)
        try:
            rc = main(["bench", "serve", "--server", f"127.0.0.1:{server.port}", "--auth-token",
                       "tok-a", *LOAD, "--metrics-url",
                       f"http://127.0.0.1:{metrics_port}/metrics", "--json", str(out)])  # fmt: skip
        finally:
            http.shutdown()
            http.server_close()
        counters = server.service.metrics()
    assert rc == 0
    m = json.loads(out.read_text())["runs"][0]["metrics"]
    duration_s, batches = m["duration_s"], counters.stats.num_batches
    tokens = counters.stats.num_tokens_forwarded
    busy_s = min(counters.batch_seconds.sum, duration_s)
    assert batches > 0 and tokens > 0 and busy_s > 0
    assert {k: m[k] for k in SERVER_SIDE} == {
        "throughput_tokens_per_s": tokens / duration_s,
        "num_batches": batches,
        "num_forwarded_tokens": tokens,
        "num_cached_tokens": None,
        "mean_batch_size": counters.batch_size.sum / batches,
        "batch_sizes": None,
        "server_busy_s": [busy_s],
        "server_utilization": [busy_s / duration_s],
        "mean_server_utilization": busy_s / duration_s,
    }
    assert _line(capsys.readouterr().out) == (
        f"server passes: {plain(batches)} (mean batch {plain(counters.batch_size.sum / batches)} "
        f"sessions), {plain(tokens)} tokens forwarded ({plain(tokens / duration_s)} tokens/s), "
        f"utilization {plain(busy_s / duration_s)}"
    )


def test_without_a_page_they_are_null_not_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "blind.json"
    with _secured_server() as server:
        rc = main(["bench", "serve", "--server", f"127.0.0.1:{server.port}", "--auth-token",
                   "tok-a", *LOAD, "--json", str(out)])  # fmt: skip
        assert server.service.stats().num_batches > 0
    assert rc == 0
    m = json.loads(out.read_text())["runs"][0]["metrics"]
    assert {k: m[k] for k in SERVER_SIDE} == dict.fromkeys(SERVER_SIDE)
    assert m["goodput_tokens_per_s"] > 0  # what the clients count is kept
    assert _line(capsys.readouterr().out) == (
        "server passes: not measured (no Prometheus page (--metrics-url))"
    )


def _outcome(faults: tuple[FaultEvent, ...] = ()) -> RunOutcome:
    return RunOutcome(start_s=0.0, arrivals_end_s=5.0, end_s=5.0, num_started=0, finished=(),
                      failed=(), killed=(), lost=(), faults=faults, never_served=(),
                      run_tag="t")  # fmt: skip


def test_a_restart_or_a_page_without_the_counters_is_not_measured() -> None:
    """A restarted server counts from 0 (its counters may still end above where they began):
    an increase over the run means nothing then."""
    before = dict.fromkeys(PASSES, 10.0)
    after = dict.fromkeys(PASSES, 30.0)
    assert server_figures(before, after, _outcome()) == (ServerFigures(20, 20, 20, 20.0), "")
    restart = FaultEvent("restart-server", 2.0, "server killed, started again", 3.0)
    assert server_figures(before, after, _outcome((restart,))) == (
        None, "the server restarted during the run: a new process counts from 0"
    )  # fmt: skip
    kill = FaultEvent("kill-clients", 2.0, "1 client processes killed")
    assert server_figures(before, after, _outcome((kill,)))[0] == ServerFigures(20, 20, 20, 20.0)
    backwards = after | {"edgespec_batches_total": 5.0}
    assert server_figures(before, backwards, _outcome()) == (
        None, "the server restarted during the run: its counters went backwards"
    )  # fmt: skip
    older = {k: v for k, v in after.items() if k != "edgespec_batch_seconds_sum"}
    assert server_figures(before, older, _outcome()) == (
        None, "the server's page has no edgespec_batch_seconds_sum"
    )  # fmt: skip
    assert server_figures(None, after, _outcome()) == (
        None, "no Prometheus page (--metrics-url)"
    )  # fmt: skip


def test_the_own_server_runs_wisp_batching_with_a_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--batching wisp --profile NAME`` reaches the bench's own server, which serves with
    it; its passes are read from its own page."""
    out, logs = tmp_path / "wisp.json", tmp_path / "logs"
    rc = main(["bench", "serve", *SMALL, "--duration-s", "2", "--no-check", "--batching",
               "wisp", "--profile", "a100-qwen3-32b", "--log-dir", str(logs), "--json",
               str(out)])  # fmt: skip
    assert rc == 0
    listening = [x for x in (logs / "server.log").read_text().splitlines() if "listening" in x]
    assert len(listening) == 1 and ", batching wisp, prefill in parts of 512 tokens" in listening[0]
    m = json.loads(out.read_text())["runs"][0]["metrics"]
    assert m["num_batches"] > 0 and m["num_forwarded_tokens"] > 0
    assert m["throughput_tokens_per_s"] == m["num_forwarded_tokens"] / m["duration_s"]
    assert 0 < m["mean_server_utilization"] <= 1
    assert _line(capsys.readouterr().out).startswith(f"server passes: {plain(m['num_batches'])} ")
