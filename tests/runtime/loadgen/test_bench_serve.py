"""``edgespec bench serve`` end to end, the short version of docs/PERFORMANCE.md's fault run:
the bench starts ``edgespec serve`` on a small synthetic target, kills a client process and
the server mid-run, and still loses no session; every finished output equals centralized
decoding; without faults the server's Prometheus counters equal what the clients counted.
And a request that hangs is reported lost, not dropped."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from edgespec.cli import main
from edgespec.runtime.loadgen.run import LoadRun
from edgespec.runtime.loadgen.spec import LoadSpec, SloShare

SMALL = ["--synthetic-layers", "2", "--synthetic-hidden", "32", "--max-new-tokens", "12",
         "--clients", "4", "--procs", "2"]  # fmt: skip


def _bench(tmp_path: Path, *flags: str) -> tuple[int, dict[str, Any]]:
    out = tmp_path / "bench.json"
    rc = main(["bench", "serve", *SMALL, *flags, "--json", str(out)])
    return rc, json.loads(out.read_text())


def test_faults_lose_nothing_and_every_output_is_centralized(tmp_path: Path) -> None:
    rc, data = _bench(tmp_path, "--duration-s", "6", "--session-timeout-s", "1",
                      "--faults", "kill-clients@1.5,restart-server@3")  # fmt: skip
    (run,) = data["runs"]
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


def test_server_metrics_agree_with_the_clients_in_both_modes(tmp_path: Path) -> None:
    rc, data = _bench(tmp_path, "--duration-s", "2", "--mode", "distributed,centralized")
    assert rc == 0
    assert [r["setup"]["mode"] for r in data["runs"]] == ["distributed", "centralized"]
    for run in data["runs"]:
        assert run["requests"]["finished"] > 0
        assert run["check"]["num_mismatches"] == 0
        rows = run["agreement"]
        assert {r["metric"] for r in rows} >= {"edgespec_verifications_total",
                                               "edgespec_committed_tokens_total"}  # fmt: skip
        assert all(r["agrees"] for r in rows), rows
        counted = {r["metric"]: r["clients"] for r in rows}
        assert counted["edgespec_committed_tokens_total"] == 12 * run["requests"]["finished"]
    assert data["goodput_ratio"] > 0


def test_a_request_still_running_after_the_drain_is_lost() -> None:
    with socket.socket() as silent:  # accepts connections, never speaks gRPC
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        load = LoadSpec(1, 1, "closed", None, 0.5, 1.0, (SloShare("default", None, 1.0),), 8,
                        4, "ngram", 0)  # fmt: skip
        outcome = LoadRun(load, address, ((1, 2, 3),), 64, say=lambda _: None).run()
    assert outcome.num_started == 1 and not outcome.finished and not outcome.failed
    assert outcome.lost == (("client-000.0.0", "still running 1 s after the arrivals ended"),)
