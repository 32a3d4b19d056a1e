"""The shared argparse value types (edgespec.arguments), and the flags that use them:
a thread or worker count below 1 is argparse's usage error, not torch's traceback."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

from edgespec.argument_types import cpu_list, non_negative_int, positive_int, seed_int
from edgespec.arguments import TrainingOptions, add_training_arguments, training_options
from edgespec.cli import build_parser, main


def test_positive_int() -> None:
    assert positive_int("3") == 3
    with pytest.raises(argparse.ArgumentTypeError, match=r"^must be >= 1, got 0$"):
        positive_int("0")
    with pytest.raises(argparse.ArgumentTypeError, match=r"^expected an integer, got 'x'$"):
        positive_int("x")


def test_seed_int() -> None:
    assert (seed_int("0"), seed_int(str(2**63 - 1))) == (0, 2**63 - 1)
    for bad in ("-1", str(2**63)):
        with pytest.raises(
            argparse.ArgumentTypeError, match=rf"^must be in \[0, 2\*\*63\), got {bad}$"
        ):
            seed_int(bad)
    with pytest.raises(argparse.ArgumentTypeError, match=r"^expected an integer, got 'x'$"):
        seed_int("x")


@pytest.mark.parametrize(
    "argv",
    [
        ["draft", "--seed", "-1"],
        ["bench", "serve", "--seed", "-1"],
        ["calibrate", "--seed", "-1"],
        ["train", "draft", "--out", "o", "--data-dir", "d", "--seed", "-1"],
        ["trace", "--seed", "-1"],
    ],
)
def test_a_negative_seed_is_a_usage_error(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    assert "argument --seed: must be in [0, 2**63), got -1" in capsys.readouterr().err


def test_non_negative_int() -> None:
    assert (non_negative_int("0"), non_negative_int("7")) == (0, 7)
    with pytest.raises(argparse.ArgumentTypeError, match=r"^must be >= 0, got -1$"):
        non_negative_int("-1")
    with pytest.raises(argparse.ArgumentTypeError, match=r"^expected an integer, got 'x'$"):
        non_negative_int("x")


@pytest.mark.parametrize(
    ("command", "flag"),
    [
        (["serve", "--target", "never-loaded"], "--threads"),
        (["train", "draft", "--data-dir", "d", "--out", "o"], "--threads"),
        (["train", "feature-draft", "--data-dir", "d", "--out", "o"], "--threads"),
        (["train", "stop-predictor", "--traces", "t.jsonl", "--out", "o"], "--threads"),
        (["train", "awc", "--data", "d", "--out", "o"], "--threads"),
        (["sim"], "--workers"),
        (["train", "awc-data", "--out", "o"], "--contexts-per-run"),
        (["train", "awc", "--data", "d", "--out", "o"], "--width"),
        (["train", "stop-predictor", "--traces", "t.jsonl", "--out", "o"], "--mlp-trials"),
        (["train", "feature-draft", "--data-dir", "d", "--out", "o"], "--steps"),
        (["train", "awc-data", "--out", "o"], "--scenarios"),
        (["reproduce", "wisp-serving", "--profile", "p.yaml"], "--clients"),
        (["calibrate"], "--clients"),
        (["calibrate"], "--runs"),
    ],
)
def test_counts_below_one_are_usage_errors(
    command: list[str], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*command, flag, "0"])
    assert exit_info.value.code == 2
    prog = " ".join(
        ["edgespec", *command[:2]]
        if command[0] in ("train", "reproduce")
        else ["edgespec", command[0]]
    )
    err = capsys.readouterr().err
    assert err.endswith(f"{prog}: error: argument {flag}: must be >= 1, got 0\n")


@pytest.mark.parametrize(
    ("text", "cpus"), [("0", (0,)), ("1,0", (0, 1)), ("0-1", (0, 1)), (" 0 , 1", (0, 1))]
)
def test_cpu_lists(text: str, cpus: tuple[int, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert cpu_list(text) == cpus


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a", "expected CPU numbers like 0 or 0,2 or 0-3, got 'a'"),
        ("0-x", "expected CPU numbers like 0 or 0,2 or 0-3, got '0-x'"),
        ("1-3", "CPUs [2, 3] are not among this process's CPUs [0, 1]"),
        ("1-0", "CPUs '1-0' are not among this process's CPUs [0, 1]"),
    ],
)
def test_bad_cpu_lists(text: str, message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    with pytest.raises(argparse.ArgumentTypeError) as info:
        cpu_list(text)
    assert str(info.value) == message


_APPLY = """
import os, threading, torch
from edgespec.runtime.commands.cpus import apply_cpus_and_threads
before = sorted(os.sched_getaffinity(0)), torch.get_num_threads()
apply_cpus_and_threads({cpus}, {threads})
after = sorted(os.sched_getaffinity(0))
seen = []
worker = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
worker.start()
worker.join()
print("same" if after == before[0] else after, torch.get_num_threads(), seen[0], before[1])
"""


@pytest.mark.parametrize(
    ("cpus", "threads", "printed"),
    [
        ("({FIRST_CPU},)", "None", "[{FIRST_CPU}] 1 1"),
        ("({FIRST_CPU},)", "3", "[{FIRST_CPU}] 3 3"),  # --threads over --cpus' one per CPU
        ("None", "3", "same 3 3"),
        ("None", "None", "same {before} {before}"),  # torch's own stays
    ],
)
def test_cpus_and_threads_bind_the_process_and_torchs_threads(
    cpus: str, threads: str, printed: str
) -> None:
    """In a child process (this one's CPUs and threads stay as they are); a thread started
    afterwards (the endpoint's workers) runs with the same count."""
    code = _APPLY.format(cpus=cpus.format(FIRST_CPU=FIRST_CPU), threads=threads)
    env = {**os.environ, "OMP_NUM_THREADS": "2"}  # so one thread per --cpus CPU is a change
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    *shown, before = out.stdout.split()
    assert " ".join(shown) == printed.format(FIRST_CPU=FIRST_CPU, before=before)


FIRST_CPU = min(os.sched_getaffinity(0))
"""A CPU this process may run on (the tests may themselves run pinned)."""


class Applied(Exception):
    """Raised in place of pinning: the flags reached the command before any model loads."""


_DRAFT = ["draft", "--server", "127.0.0.1:1"]


@pytest.mark.parametrize(
    ("module", "argv"),
    [
        ("serve", ["serve", "--target", "never-loaded"]),
        ("draft", [*_DRAFT, "--prompt", "a"]),
        ("draft", [*_DRAFT, "--prompt", "a", "--compare"]),
        ("draft", [*_DRAFT, "--serve-openai", "127.0.0.1:0"]),
    ],
)
def test_cpus_and_threads_reach_the_command_before_anything_loads(
    module: str, argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``edgespec serve`` and every mode of ``edgespec draft`` apply both flags, one way."""

    def applied(cpus: tuple[int, ...] | None, threads: int | None) -> None:
        raise Applied(cpus, threads)

    monkeypatch.setattr(f"edgespec.runtime.commands.{module}.apply_cpus_and_threads", applied)
    with pytest.raises(Applied) as info:
        main([*argv, "--cpus", str(FIRST_CPU), "--threads", "2"])
    assert info.value.args == ((FIRST_CPU,), 2)
    with pytest.raises(Applied) as info:
        main(argv)
    assert info.value.args == (None, None)


def test_the_readmes_threads_advice_parses() -> None:
    """README, "The speed you will see over gRPC": each process gets ``--threads 1``."""
    parser = build_parser()
    for argv in (["draft", "--server", "h:1", "--prompt", "a"], ["serve"]):
        assert parser.parse_args([*argv, "--threads", "1"]).threads == 1


def test_serve_and_draft_list_threads_and_cpus_together() -> None:
    """``--help``: ``--threads`` right before ``--cpus``, which says ``--threads`` wins."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for command in ("serve", "draft"):
        text = sub.choices[command].format_help()
        threads, cpus = text.index("  --threads THREADS"), text.index("  --cpus LIST")
        assert "\n  --" not in text[threads + 3 : cpus]
        assert "one torch thread each unless --threads" in " ".join(text[cpus:].split())


def _training_parser(defaults: TrainingOptions) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trainer")
    add_training_arguments(
        parser, defaults=defaults, helps={"holdout": "share of prompts held out"}
    )
    return parser


def test_the_training_group_takes_the_flags_its_defaults_name() -> None:
    every = TrainingOptions(100, 1e-3, weight_decay=1e-2, batch_size=256, holdout=0.25)
    args = _training_parser(every).parse_args(["--epochs", "7", "--lr", "0.01", "--holdout", ".5"])
    assert training_options(args) == TrainingOptions(7, 0.01, 1e-2, 256, 0.5)
    assert (args.epochs, args.lr, args.weight_decay, args.batch_size) == (7, 0.01, 1e-2, 256)
    some = _training_parser(TrainingOptions(4, 2e-3, weight_decay=0.01))
    assert training_options(some.parse_args([])) == TrainingOptions(4, 2e-3, 0.01, None, None)
    flags = {a.option_strings[0] for a in some._actions if a.option_strings}
    assert flags == {"-h", "--epochs", "--lr", "--weight-decay"}
    helps = {a.dest: a.help for a in _training_parser(every)._actions}
    assert helps["holdout"] == "share of prompts held out (default 0.25)"
    assert helps["lr"] == "AdamW learning rate (default 0.001)"


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--epochs", "0", "must be >= 1, got 0"),
        ("--lr", "0", "must be > 0, got 0"),
        ("--lr", "fast", "expected a number, got 'fast'"),
        ("--weight-decay", "-0.1", "must be >= 0, got -0.1"),
        ("--batch-size", "2.5", "expected an integer, got '2.5'"),
        ("--holdout", "1", "must be between 0 and 1 (exclusive), got 1"),
    ],
)
def test_a_bad_training_value_is_a_usage_error(
    flag: str, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = _training_parser(TrainingOptions(1, 1e-3, 0.0, 8, 0.1))
    with pytest.raises(SystemExit) as exit_info:
        parser.parse_args([flag, value])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.endswith(f"trainer: error: argument {flag}: {message}\n")


def test_training_options_check_their_values_where_built() -> None:
    with pytest.raises(
        ValueError, match=r"^--holdout: must be between 0 and 1 \(exclusive\), got 0$"
    ):
        TrainingOptions(1, 1e-3, holdout=0)
    with pytest.raises(ValueError, match=r"^--epochs: expected a number, got '3'$"):
        TrainingOptions("3", 1e-3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^--lr: expected a number, got None$"):
        TrainingOptions(3, None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^unknown training fields \['momentum'\]"):
        add_training_arguments(
            argparse.ArgumentParser(), defaults=TrainingOptions(1, 1.0), helps={"momentum": "m"}
        )


@pytest.mark.parametrize("what", ["draft", "feature-draft"])
def test_the_draft_trainers_share_the_training_group(
    what: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["train", what, "--data-dir", "d", "--out", "o", "--lr", "-1"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.endswith(
        f"edgespec train {what}: error: argument --lr: must be > 0, got -1\n"
    )


@pytest.mark.parametrize(
    "command",
    [
        ["serve", "--target", "never-loaded"],
        ["train", "stop-predictor", "--traces", "t.jsonl", "--out", "o"],
        ["profile"],
    ],
)
def test_threads_are_at_most_256(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """100,000 torch threads hung the first matrix product (1,024 on 2 cores: 9x slower)."""
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--threads", "257"])
    assert exit_info.value.code == 2
    prog = " ".join(command[:2]) if command[0] == "train" else command[0]
    err = capsys.readouterr().err
    assert err.endswith(f"edgespec {prog}: error: argument --threads: must be <= 256, got 257\n")
