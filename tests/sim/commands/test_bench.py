"""``edgespec bench`` (edgespec.sim.commands.bench): argument errors are one line, exit status 2."""

from __future__ import annotations

import json
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.policies.registry import BATCHING


@pytest.mark.parametrize("target", ["sim", "policy", "memory"])
def test_repeat_below_one_is_a_user_error(target: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", target, "--repeat", "0"]) == 2
    assert capsys.readouterr().err == f"edgespec bench {target}: --repeat must be >= 1, got 0\n"


@pytest.mark.parametrize("target", ["policy", "memory"])
def test_overrides_only_for_the_sim_benchmark(
    target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", target, "seed=1"]) == 2
    assert capsys.readouterr().err == (
        f"edgespec bench {target}: takes no key.path=value overrides (bench sim does), "
        "got ['seed=1']\n"
    )


def test_missing_target_does_not_call_the_overrides_required(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["bench"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.endswith(
        "edgespec bench: error: the following arguments are required: TARGET\n"
    )


@pytest.mark.parametrize(
    ("flags", "tty", "shown"),
    [([], True, True), (["--quiet"], True, False), ([], False, False)],
)
def test_a_progress_bar_only_on_a_terminal_and_not_with_quiet(
    flags: list[str], tty: bool, shown: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from edgespec.sim import simulator

    seen: list[bool] = []
    real = simulator.simulate

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("progress", False))
        return real(*args, **kwargs)

    monkeypatch.setattr(simulator, "simulate", spy)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: tty)
    tiny = ["duration_s=1", "auto_topology.devices.0.count=10", "auto_topology.servers.0.count=1"]
    assert main(["bench", "sim", *flags, *tiny]) == 0
    assert seen == [shown, shown]  # the timed path and the other one


def test_a_json_path_that_is_a_directory_is_refused_before_the_benchmark(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*args: Any) -> None:
        raise AssertionError("the benchmark ran")

    monkeypatch.setattr("edgespec.sim.commands.bench._timed", never)
    with pytest.raises(SystemExit) as stop:
        main(["bench", "sim", "--json", str(tmp_path)])
    assert stop.value.code == 2
    assert f"argument --json: {tmp_path} is a folder; give a file name" in capsys.readouterr().err


def test_the_json_file_s_folder_is_made(tmp_path: Any) -> None:
    out = tmp_path / "new" / "deeper" / "policy.json"
    assert main(["bench", "policy", "--json", str(out)]) == 0
    depths = [row["queue_depth"] for row in json.loads(out.read_text())]
    assert depths[:3] == [10, 100, 1000]


def test_the_policy_lines_line_up_under_the_longest_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every registered policy, its name right-aligned to the longest (``decodes-first``)."""
    assert main(["bench", "policy", "--repeat", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert {line.split()[0] for line in lines} == set(BATCHING)
    assert len({line.index(" depth ") for line in lines}) == 1
    assert any(line.startswith("decodes-first depth    10: ") for line in lines)
    assert any(line.startswith(" " * 9 + "fcfs depth    10: ") for line in lines)
