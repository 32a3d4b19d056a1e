"""``edgespec bench`` (edgespec.sim.commands.bench): flags that contradict each other, act
only on ``bench sim`` or name an output that cannot be written are refused before the
benchmark runs: one line, exit status 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main


@pytest.fixture(autouse=True)
def never_timed(monkeypatch: pytest.MonkeyPatch) -> None:
    def never(*args: Any) -> None:
        raise AssertionError("the benchmark ran")

    monkeypatch.setattr("edgespec.sim.commands.bench._timed", never)


def test_a_profile_path_under_a_file_is_refused_before_the_benchmark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "afile").write_text("")
    with pytest.raises(SystemExit) as stop:
        main(["bench", "sim", "--profile", str(tmp_path / "afile" / "x")])
    assert stop.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"edgespec bench sim: error: argument --profile: {tmp_path / 'afile' / 'x'}: "
        f"{tmp_path / 'afile'} is a file, not a folder"
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--straightforward", "--handlers", "inbound"],
            "--straightforward times the reference handler set, --handlers inbound names "
            "one: give one of them",
        ),
        (
            ["--check", "--one-path"],
            "--check compares with the other path, --one-path times only one: give one of them",
        ),
        (  # fast was timed against fast, its rate reported as the reference's
            ["--handlers", "fast", "fast_path=false"],
            "the override 'fast_path=false' chooses the path, --handlers fast names one: give "
            "one of them",
        ),
        (  # the flag's fast_path=false silently replaced the override
            ["fast_path=true", "--straightforward"],
            "--straightforward sets fast_path=false, the override 'fast_path=true' sets it too: "
            "give one of them",
        ),
    ],
)
def test_contradicting_flags_are_refused(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "sim", *flags]) == 2
    assert capsys.readouterr().err == f"edgespec bench sim: {message}\n"


@pytest.mark.parametrize(
    "flags",
    [
        ["--straightforward"],
        ["--handlers", "fast"],
        ["--check"],
        ["--one-path"],
        ["--profile", "p"],
    ],
)
@pytest.mark.parametrize("target", ["policy", "memory"])
def test_sim_only_flags_are_refused_for_the_other_benchmarks(
    flags: list[str],
    target: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["bench", target, *flags]) == 2
    assert capsys.readouterr().err == (
        f"edgespec bench {target}: {flags[0]} applies only to bench sim\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_the_profile_s_folder_is_made_before_the_benchmark(tmp_path: Path) -> None:
    profile = tmp_path / "new" / "deeper" / "sim.prof"
    with pytest.raises(AssertionError, match="the benchmark ran"):
        main(["bench", "sim", "--profile", str(profile)])
    assert profile.parent.is_dir()


@pytest.mark.parametrize(
    ("target", "flags", "message"),
    [
        ("sim", ["--repeat", "1001"], "--repeat must be <= 1,000, got 1001"),
        ("policy", ["--repeat", "1000000000"], "--repeat must be <= 1,000, got 1000000000"),
        (
            "memory",
            ["--repeat", "2"],
            "--repeat applies only to bench sim and bench policy",
        ),
    ],
)
def test_a_repeat_over_the_bound_or_where_it_does_nothing_is_refused(
    target: str,
    flags: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def never(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the benchmark ran")

    monkeypatch.setattr("edgespec.sim.policy_bench.bench_policies", never)
    monkeypatch.setattr("edgespec.sim.memory_bench.access_costs", never)
    assert main(["bench", target, *flags]) == 2
    assert capsys.readouterr().err == f"edgespec bench {target}: {message}\n"


@pytest.mark.parametrize(("flags", "repeat"), [([], 3), (["--repeat", "1"], 1)])
def test_bench_policy_runs_as_many_times_as_asked(
    flags: list[str], repeat: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--repeat 1`` is one run per policy, not raised to 3 (3 is the default)."""
    asked: list[int] = []

    def bench_policies(repeat: int) -> list[Any]:
        asked.append(repeat)
        return []

    monkeypatch.setattr("edgespec.sim.policy_bench.bench_policies", bench_policies)
    assert main(["bench", "policy", *flags]) == 0
    assert asked == [repeat]


@pytest.mark.parametrize(
    "flags", [["record_rounds=true"], ["--handlers", "inbound", "record_rounds=true"]]
)
def test_record_rounds_is_refused_for_a_benchmark_that_keeps_no_records(
    flags: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """bench sim streams each run into its metrics: round records were silently dropped (and
    a handler set without them timed), so asking for them is refused before anything runs."""
    assert main(["bench", "sim", *flags]) == 2
    assert capsys.readouterr().err == (
        "edgespec bench sim: record_rounds=true: bench sim keeps no records, so no round would be "
        "recorded; drop it (`edgespec sim --rounds` keeps them)\n"
    )


def test_profile_and_json_at_one_path_are_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The JSON result replaced the cProfile stats (exit 0)."""

    def never(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the benchmark ran")

    monkeypatch.setattr("edgespec.sim.commands.bench._timed", never)
    both = tmp_path / "x.out"
    assert main(["bench", "sim", "--profile", str(both), "--json", str(both)]) == 2
    assert capsys.readouterr().err == (
        f"edgespec bench sim: --json {both} is also --profile's file: the second would replace "
        "the first; give another\n"
    )
