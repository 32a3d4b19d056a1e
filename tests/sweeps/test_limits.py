"""A sweep's bounds: no more local processes (or local Ray CPUs) than runs, a Ray
cluster's address tried with a short TCP connect before ``ray.init`` (which waits without
end on one that does not answer), and at most MAX_POINTS points in a grid."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from edgespec.config import ConfigError, ConfigFileError
from edgespec.errors import UserInputError
from edgespec.policies.contracts import PolicyContractError
from edgespec.sweeps import executor, ray_executor
from edgespec.sweeps.capacity import capacity_search
from edgespec.sweeps.executor import ProcessPoolSweepExecutor, max_workers
from edgespec.sweeps.grid import MAX_POINTS, check_points, grid_points, run_sweep
from edgespec.sweeps.ray_executor import RaySweepExecutor, check_address
from tests.sweeps.executors import FakeRay
from tests.sweeps.test_capacity import metrics_with_violations


def test_a_process_pool_starts_no_more_processes_than_items(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[int | None] = []

    class Recording(ProcessPoolExecutor):
        def __init__(self, max_workers: int | None = None, **options: Any) -> None:
            asked.append(max_workers)
            super().__init__(max_workers=max_workers, **options)

    monkeypatch.setattr(executor, "ProcessPoolExecutor", Recording)
    assert sorted(ProcessPoolSweepExecutor(300).map_unordered(abs, [-1, -2])) == [(0, 1), (1, 2)]
    assert list(ProcessPoolSweepExecutor(3).map_unordered(abs, [])) == []
    assert asked == [2, 1]


def test_max_workers_is_four_per_cpu_here_and_a_fixed_bound_on_a_cluster(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 3)
    assert (max_workers(), max_workers("h:1")) == (12, 10_000)
    monkeypatch.setattr("os.cpu_count", lambda: None)
    assert max_workers() == 4


def test_a_local_ray_gets_no_more_cpus_than_items(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeRay()
    monkeypatch.setattr(ray_executor, "_ray", lambda: fake)
    assert sorted(RaySweepExecutor(None, 300).map_unordered(abs, [-1, -2])) == [(0, 1), (1, 2)]
    assert [options["num_cpus"] for options in fake.inits] == [2]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_an_unreachable_cluster_is_refused_before_ray_init(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeRay()
    monkeypatch.setattr(ray_executor, "_ray", lambda: fake)
    address = f"127.0.0.1:{_closed_port()}"
    with pytest.raises(UserInputError) as error:
        list(RaySweepExecutor(address, 2).map_unordered(abs, [1]))
    assert str(error.value) == (
        f"--address {address}: no Ray cluster reachable there (Connection refused within "
        "5 s); start one (ray start --head) or leave --address out for a local Ray"
    )
    assert fake.inits == []


def test_an_address_that_does_not_answer_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    tried: list[tuple[Any, float]] = []

    def silent(where: Any, timeout: float) -> Any:
        tried.append((where, timeout))
        raise TimeoutError("timed out")

    monkeypatch.setattr(socket, "create_connection", silent)
    with pytest.raises(UserInputError) as error:
        check_address("ray://[::1]:10001", 0.5)
    assert str(error.value) == (
        "--address ray://[::1]:10001: no Ray cluster reachable there (no answer within "
        "0.5 s); start one (ray start --head) or leave --address out for a local Ray"
    )
    assert tried == [(("::1", 10001), 0.5)]
    check_address("auto")  # Ray's to resolve: nothing tried
    assert len(tried) == 1


@pytest.mark.parametrize("address", ["nohost", "h:", ":6379", "h:0", "h:70000", "h:x"])
def test_an_address_without_host_and_port_is_refused(address: str) -> None:
    with pytest.raises(UserInputError) as error:
        check_address(address)
    assert str(error.value) == f"--address {address}: expected host:port, ray://host:port or auto"


def test_a_grid_over_max_points_is_refused_before_any_point_is_made() -> None:
    assert MAX_POINTS == 100_000
    assert len(grid_points({"a": list(range(1000)), "b": list(range(100))})) == MAX_POINTS
    with pytest.raises(UserInputError) as error:
        grid_points({"seed": list(range(300)), "workload.think_time_s": list(range(400))})
    assert str(error.value) == (
        "--sweep: 120,000 points (300 seed x 400 workload.think_time_s); "
        "at most 100,000 in one sweep"
    )


def test_check_points_checks_every_point_and_stops_at_a_bad_one() -> None:
    seen: list[int] = []

    def check(point: Any) -> None:
        seen.append(point["a"])
        if point["a"] == 2:
            raise ValueError("bad 2")

    with pytest.raises(ValueError, match="bad 2"):
        check_points(grid_points({"a": [1, 2, 3]}), check, progress=False)
    assert seen == [1, 2]


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (
            ConfigError("policies.window.params.gamma", "gamma must be >= 1, got 0"),
            "config field 'policies.window.params.gamma': at sweep point 4 of 4 (a=2 "
            "b={c: [1, x]}): gamma must be >= 1, got 0",
        ),
        (
            ConfigFileError("t.jsonl", "file not found"),
            "t.jsonl: at sweep point 4 of 4 (a=2 b={c: [1, x]}): file not found",
        ),
    ],
)
def test_check_points_names_the_point_a_config_error_is_at(error: ConfigError, said: str) -> None:
    def check(point: Any) -> None:
        if point["a"] == 2 and point["b"] != 0:
            raise error

    with pytest.raises(ConfigError) as refused:
        check_points(grid_points({"a": [1, 2], "b": [0, {"c": [1, "x"]}]}), check, progress=False)
    assert str(refused.value) == said
    assert type(refused.value) is type(error) and refused.value.path == error.path


@pytest.mark.parametrize(
    "command",
    [
        ["reproduce", "wisp", "--quick"],  # were unbounded: a process per run, up to 292
        ["reproduce", "zhu", "--quick"],  # wisv-real-pair refuses any --workers over 1
        ["train", "awc-data", "--quick"],  # likewise, as local Ray CPUs
    ],
)
def test_every_workers_flag_is_four_per_cpu_here(
    command: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from edgespec.cli import main

    monkeypatch.setattr("os.cpu_count", lambda: 3)
    out = tmp_path / "out"
    assert main([*command, "--out", str(out), "--workers", "13"]) == 2
    prog = " ".join(["edgespec", *command[:2]])  # the whole command, as argparse names it
    assert capsys.readouterr().err == f"{prog}: --workers 13: at most 12 (4 per CPU here)\n"
    assert not out.exists()


def _broken_at_two(scenario: Mapping[str, Any]) -> Any:
    """A run whose batching policy breaks its contract at a=2 (a bug in the policy)."""
    if scenario["a"] == 2:
        raise PolicyContractError("batching policy Sjf chose entry ids [9] not in the queue")
    return metrics_with_violations(0)


def test_a_sweep_point_whose_policy_breaks_its_contract_is_named() -> None:
    """It said the contract line alone: in a sweep of thousands, no way to find the point
    (shards named theirs)."""
    with pytest.raises(PolicyContractError) as error:
        run_sweep({"a": 0}, {"a": [1, 2, 3]}, _broken_at_two, progress=False)
    assert str(error.value) == (
        "at sweep point 2 of 3 (a=2): batching policy Sjf chose entry ids [9] not in the queue"
    )


def test_a_capacity_probe_whose_policy_breaks_its_contract_is_named() -> None:
    with pytest.raises(PolicyContractError) as error:
        capacity_search({"a": 0}, "a", _broken_at_two, epsilon=0.1, lo=2, hi=4, progress=False)
    assert str(error.value) == (
        "at capacity probe a=2: batching policy Sjf chose entry ids [9] not in the queue"
    )
    with pytest.raises(UserInputError, match=r"^at capacity probe a=1: trace gone$"):
        capacity_search({"a": 0}, "a", _refusing, epsilon=0.1, lo=1, hi=4, progress=False)


def _refusing(scenario: Mapping[str, Any]) -> Any:
    raise UserInputError("trace gone")
