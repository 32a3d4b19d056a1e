"""A stopped ``edgespec reproduce wisp-serving`` (an error, Ctrl-C, SIGTERM) before its
report leaves no partial results: the round logs it wrote beside ``--out`` are removed (they
were left beside no report), the servers' logs kept to say what happened, and the clients
it started are ended (a stop while they were starting left those started waiting ten
minutes)."""

from __future__ import annotations

import multiprocessing as mp
import multiprocessing.context
import signal
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.models import loading
from edgespec.reproduce.wisp import serving
from edgespec.reproduce.wisp.serving_clients import ClientPlan, run_clients
from tests.runtime.child_starts import children_left, signal_inside_starts

BASE = ["reproduce", "wisp-serving", "--clients", "1", "--seconds", "0.5", "--prompts", "2",
        "--target", "t", "--profile", "a100-qwen3-32b"]  # fmt: skip


@pytest.fixture
def stopped_in_sled(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each system's server writes its logs; Ctrl-C while SLED's runs. Returns the systems
    run."""
    ran: list[str] = []

    def run_system(name: str, args: Any, prompts: list[list[int]]) -> list[dict[str, Any]]:
        ran.append(name)
        serving.round_log_path(args.out, name).write_text("")
        serving.server_log_path(args.out, name).write_text("ready\n")
        if name == "sled":
            raise KeyboardInterrupt
        return []

    monkeypatch.setattr(loading, "load_tokenizer", lambda *a, **k: lambda t: {"input_ids": [1]})
    monkeypatch.setattr(serving, "run_system", run_system)
    monkeypatch.setattr(serving, "attribution_summary", lambda path: {})
    return ran


def test_a_stopped_run_removes_its_round_logs_and_keeps_the_servers(
    tmp_path: Path, stopped_in_sled: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "new" / "r.json"
    assert main([*BASE, "--out", str(out)]) == 130
    assert capsys.readouterr().err == "edgespec reproduce wisp-serving: interrupted\n"
    assert stopped_in_sled == ["fcfs", "sled"]
    assert sorted(p.name for p in out.parent.iterdir()) == [
        "r-fcfs-server.log",
        "r-sled-server.log",
    ]


def test_a_stopped_run_keeps_the_files_it_did_not_write(
    tmp_path: Path, stopped_in_sled: list[str]
) -> None:
    (tmp_path / "notes.txt").write_text("mine\n")
    (tmp_path / "r-wisp-server.log").write_text("an earlier run's\n")
    assert main([*BASE, "--out", str(tmp_path / "r.json")]) == 130
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "notes.txt", "r-fcfs-server.log", "r-sled-server.log", "r-wisp-server.log"
    ]  # fmt: skip
    assert (tmp_path / "r-wisp-server.log").read_text() == "an earlier run's\n"


@pytest.mark.timeout(60)
def test_a_stop_while_the_clients_start_ends_those_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[Any] = []
    start = multiprocessing.context.ForkServerProcess.start

    def start_one_then_stop(process: Any) -> None:
        if started:
            raise KeyboardInterrupt  # Ctrl-C as the second client starts
        start(process)
        started.append(process)

    monkeypatch.setattr(multiprocessing.context.ForkServerProcess, "start", start_one_then_stop)
    plan = ClientPlan("127.0.0.1:9", ["c1"], [[1]], 0.5, 4)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_clients(plan, 2)
        assert len(started) == 1 and started[0].exitcode is not None  # ended and joined
        assert mp.active_children() == []
    finally:
        for process in started:
            process.kill()


@pytest.mark.timeout(60)
def test_a_signal_inside_a_clients_start_lets_the_start_finish_first(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C from inside ``Process.start()``, after the child was started and before its
    start data was written (:mod:`tests.runtime.child_starts`): the parent closed that pipe,
    and the child's ``EOFError: Ran out of input`` traceback was the run's last line (as
    ``edgespec bench serve``'s was)."""
    starts = signal_inside_starts(monkeypatch, signal.SIGINT)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # xdist ignores it
    try:
        with pytest.raises(KeyboardInterrupt):
            run_clients(ClientPlan("127.0.0.1:9", ["c1"], [[1]], 0.5, 4), 2)
    finally:
        signal.signal(signal.SIGINT, previous)
    left = children_left()
    err = capfd.readouterr().err
    assert (starts.num_signalled, len(starts.finished_pids), left) == (1, 1, [])
    assert mp.active_children() == []
    assert "Traceback" not in err, err
