"""``edgespec reproduce wisp-serving`` fails fast and in one line: a bad ``--profile`` or
``--prompts`` before anything loads, a server that does not start with its log's reason,
a client that fails or dies naming it (the parent never waits on it forever)."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.errors import UserInputError
from edgespec.models import loading
from edgespec.reproduce.wisp import serving
from edgespec.reproduce.wisp.serving_clients import HANG_GRACE_S, ClientResult, collect
from tests.reproduce.tiny_model import save_tiny_model

pytest.importorskip("torch")
pytest.importorskip("grpc")

BASE = ["reproduce", "wisp-serving", "--clients", "1", "--seconds", "0.5", "--prompts", "2"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny"))


@pytest.fixture
def no_tokenizer(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the tokenizer was loaded")

    monkeypatch.setattr(loading, "load_tokenizer", refuse)
    yield


@pytest.mark.usefixtures("no_tokenizer")
@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (None, "{file}: file not found"),
        ("kind: wisp\n", "{file}.a_s: required field is missing"),
        ("", "{file}: the file is empty; a profile gives its kind and coefficients"),
    ],
)
def test_a_bad_profile_file_is_refused_before_anything_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str | None, problem: str
) -> None:
    """Was found only when the WISP server exited, after FCFS and SLED had run:
    'RuntimeError: server exited with 2', a traceback without the reason."""
    profile = tmp_path / "p.yaml"
    if text is not None:
        profile.write_text(text)
    out = tmp_path / "r.json"
    assert main([*BASE, "--profile", str(profile), "--out", str(out)]) == 2
    message = problem.format(file=profile)
    assert capsys.readouterr().err == f"edgespec reproduce wisp-serving: --profile: {message}\n"
    assert list(tmp_path.iterdir()) == ([profile] if text is not None else [])


@pytest.mark.usefixtures("no_tokenizer")
def test_a_profile_of_another_kind_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--profile", "rtx4500-llama2-7b-zhu", "--out", str(tmp_path / "r.json")]
    assert main([*BASE, *args]) == 2
    assert capsys.readouterr().err == (
        "edgespec reproduce wisp-serving: "
        "--profile: 'rtx4500-llama2-7b-zhu' is not a 'wisp' profile\n"
    )


@pytest.mark.usefixtures("no_tokenizer")
def test_more_prompts_than_gsm8k_test_has_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was cut to the 100 there are, silently."""
    args = ["--profile", "a100-qwen3-32b", "--prompts", "101", "--out", str(tmp_path / "r.json")]
    assert main([*BASE, *args]) == 2
    assert capsys.readouterr().err == (
        "edgespec reproduce wisp-serving: "
        "--prompts: 101 asked for, but GSM8K's test split has 100 prompts\n"
    )


def test_a_server_that_does_not_start_says_why(
    model_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its output went to /dev/null: 'RuntimeError: server exited with 2', a traceback."""
    systems = {**serving.SYSTEMS, "fcfs": ["--batching", "fcfs", "--guard-ms", "1"]}
    monkeypatch.setattr(serving, "SYSTEMS", systems)
    out = tmp_path / "r.json"
    args = ["--target", str(model_dir), "--profile", "a100-qwen3-32b", "--out", str(out)]
    assert main([*BASE, *args]) == 2
    log = tmp_path / "r-fcfs-server.log"
    assert serving.server_log_path(out, "fcfs") == log
    assert capsys.readouterr().err == (
        "edgespec reproduce wisp-serving: "
        "fcfs: the verification server exited (2) before it served; the "
        f"end of its log ({log}):\nedgespec serve: --batching: --profile "
        "and --guard-ms configure the wisp batching policy; batching is 'fcfs' (add "
        "--batching wisp)\n"
    )


@pytest.mark.timeout(120)
def test_a_failing_client_is_named_with_its_error(
    model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server refuses the session (prompt + max_new_tokens beyond the context): the
    client died without putting its rows and the parent waited on the queue forever."""
    out = tmp_path / "r.json"
    args = ["--target", str(model_dir), "--profile", "a100-qwen3-32b", "--out", str(out)]
    assert main([*BASE, *args, "--max-new-tokens", "5000"]) == 2
    assert capsys.readouterr().err == (
        "edgespec reproduce wisp-serving: "
        "fcfs: client 0 (class c1) failed: RequestError: INVALID_ARGUMENT: "
        "prompt (45 tokens) + max_new_tokens (5000) exceeds the target's context of 4096\n"
    )
    assert not out.exists()


def test_a_client_that_dies_without_reporting_is_named() -> None:
    """A client killed before it puts anything: the parent stops waiting and names it."""
    out: Any = mp.Queue()
    worker = mp.Process(target=os._exit, args=(3,))
    worker.start()
    with pytest.raises(UserInputError) as caught:
        collect(out, [worker], ["gold"])
    assert str(caught.value) == "client 0 (class gold) exited with 3 without reporting its rows"
    worker.join()


def test_rows_come_back_in_client_order_after_the_clients_exit() -> None:
    out: Any = mp.Queue()
    workers = [mp.Process(target=out.put, args=(ClientResult(i, rows=[{"i": i}]),)) for i in (0, 1)]
    for w in reversed(workers):
        w.start()
    for w in workers:
        w.join()  # exited before the parent reads: what they put is still collected
    assert collect(out, workers, ["a"]) == [{"i": 0}, {"i": 1}]


@pytest.mark.timeout(180)
def test_a_run_writes_its_report_and_its_servers_logs(
    model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The way through, WISP's server alone (on a free port; each system takes ~10 s to
    start): the report, the server's round log and its output."""
    wisp_alone = {"wisp": serving.SYSTEMS["wisp"]}  # a new dict: the module's keeps its order
    monkeypatch.setattr(serving, "SYSTEMS", wisp_alone)
    out = tmp_path / "r.json"
    args = ["--target", str(model_dir), "--profile", "a100-qwen3-32b", "--out", str(out)]
    two = ["--clients", "2"]  # BASE's 0.5 s, from when both are connected (it was from spawn)
    assert main([*BASE, *two, "--max-new-tokens", "4", *args]) == 0
    report = json.loads(out.read_text())
    assert report["identical_outputs_across_systems"] is True and report["wisp"]["requests"] >= 2
    assert report["wisp"]["attribution"]["rounds_with_deadline"] > 0 and "fcfs" not in report
    assert serving.round_log_path(out, "wisp").stat().st_size > 0
    assert "ready" in serving.server_log_path(out, "wisp").read_text()


def test_a_target_without_a_tokenizer_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Was ``SystemExit`` with exit status 1."""
    monkeypatch.setattr(loading, "load_tokenizer", lambda *args, **kwargs: None)
    args = ["--target", "t", "--profile", "a100-qwen3-32b", "--out", str(tmp_path / "r.json")]
    assert main([*BASE, *args]) == 2
    assert capsys.readouterr().err == (
        "edgespec reproduce wisp-serving: --target t: no tokenizer (the prompts are text)\n"
    )


def test_a_client_still_running_past_the_deadline_is_named_and_ended() -> None:
    """A client hung in its first call (a forked child's gRPC can deadlock) kept the
    parent waiting for good: past the run's end and the grace it is named."""
    out: Any = mp.Queue()
    worker = mp.Process(target=time.sleep, args=(60,))
    worker.start()
    started = time.monotonic()
    try:
        with pytest.raises(UserInputError) as caught:
            collect(out, [worker], ["gold"], deadline=time.time() + 1.0)
        assert time.monotonic() - started < 10
    finally:
        worker.terminate()
        worker.join()
    assert str(caught.value) == (
        f"client 0 (class gold) was still running {HANG_GRACE_S:g} s after the run's end: ended"
    )
