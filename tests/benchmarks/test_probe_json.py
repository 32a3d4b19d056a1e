"""benchmarks/probes/probe_json.py, the probes' ``--json PATH``: the host it records, the
command line as the docs quote it, the atomic write, and the one-line errors of a bad
``--json`` or argument, given before the run."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from tests.benchmarks.scripts import load_script

HELPER = load_script("probes/probe_json.py", "probe_json")

CPUINFO = """processor\t: 0
model name\t: Intel(R) Xeon(R) Processor
flags\t\t: fpu sse2 avx2 avx512f avx512bw
processor\t: 1
model name\t: Intel(R) Xeon(R) Processor
"""


def test_the_cpu_is_the_first_model_name_and_its_avx512() -> None:
    assert HELPER.cpu_model(CPUINFO) == "Intel(R) Xeon(R) Processor, with AVX-512"
    assert HELPER.cpu_model("model name : Ampere Altra\nflags : fp asimd\n") == (
        "Ampere Altra, without AVX-512"
    )
    assert HELPER.cpu_model("") == "unknown, without AVX-512"


def test_the_command_is_quoted_as_the_docs_quote_it() -> None:
    argv = ["2", "19,48", "--json", "benchmarks/results/head.json"]
    assert HELPER.command_line("head_speed.py", argv) == (
        "python benchmarks/probes/head_speed.py 2 19,48 --json benchmarks/results/head.json"
    )
    assert HELPER.command_line("x.py", ["a b"]) == "python benchmarks/probes/x.py 'a b'"


def test_a_record_holds_the_command_the_host_and_the_results(tmp_path: Path) -> None:
    host = HELPER.Host("CPU, with AVX-512", "2.13.0+cpu", 2)
    record = HELPER.probe_record("python benchmarks/probes/x.py", host, {"rows": [1.5]})
    path = tmp_path / "x.json"
    HELPER.write_json(path, record)
    assert json.loads(path.read_text()) == {
        "command": "python benchmarks/probes/x.py",
        "cpu": "CPU, with AVX-512",
        "torch": "2.13.0+cpu",
        "threads": 2,
        "results": {"rows": [1.5]},
    }
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "x.json"
    path.write_text("old\n")
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        HELPER.write_json(path, {"ms": float("nan")})

    def refuse(source: str, target: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(HELPER.os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        HELPER.write_json(path, {"ms": 1.0})
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_this_host_reads_torch() -> None:
    import torch

    host = HELPER.this_host()
    assert (host.torch_version, host.num_threads) == (torch.__version__, torch.get_num_threads())
    assert host.cpu.endswith(" AVX-512")


def test_a_probe_measuring_in_children_records_their_threads(tmp_path: Path) -> None:
    """first_pass.py's children run one thread each: its record said the parent's 2."""
    path = tmp_path / "x.json"
    HELPER.finish(path, "first_pass.py", ["4"], {"s": 1.0}, num_threads=1)
    assert json.loads(path.read_text())["threads"] == 1
    first_pass = load_script("probes/first_pass.py", "first_pass")
    assert first_pass.CHILD_THREADS == 1


def _error(
    parser: argparse.ArgumentParser, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> str:
    with pytest.raises(SystemExit) as exit_info:
        parser.parse_args(argv)
    assert exit_info.value.code == 2
    return capsys.readouterr().err.splitlines()[-1]


def test_bad_arguments_are_one_line_errors_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser(prog="probe.py")
    parser.add_argument("rows", nargs="?", type=HELPER.int_list, metavar="ROWS")
    parser.add_argument("threads", nargs="?", type=HELPER.positive_int, metavar="THREADS")
    HELPER.add_json_option(parser)
    missing = tmp_path / "nowhere" / "x.json"
    assert _error(parser, ["--json", str(missing)], capsys) == (
        f"probe.py: error: argument --json: folder {missing.parent} of {missing} does not exist"
    )
    assert _error(parser, ["--json", str(tmp_path)], capsys) == (
        f"probe.py: error: argument --json: {tmp_path} is a folder, not a file"
    )
    assert _error(parser, ["1,x"], capsys) == (
        "probe.py: error: argument ROWS: expected comma-separated integers >= 1, got '1,x'"
    )
    assert _error(parser, ["1", "0"], capsys) == (
        "probe.py: error: argument THREADS: expected an integer >= 1, got '0'"
    )
    args = parser.parse_args(["1,5", "2", "--json", str(tmp_path / "x.json")])
    assert (args.rows, args.threads, args.json) == ([1, 5], 2, tmp_path / "x.json")


RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


def _probe_command(path: Path) -> str:
    """The ``command`` of a probe's ``--json`` record; ``""`` for any other results file."""
    data = json.loads(path.read_text())
    command = str(data.get("command", "")) if isinstance(data, dict) else ""
    return (
        command if command.startswith("python benchmarks/probes/") and "--json" in command else ""
    )


PROBE_RECORDS = sorted(p for p in RESULTS.glob("*.json") if _probe_command(p))


def test_the_probes_have_written_records() -> None:
    assert len(PROBE_RECORDS) >= 6, [p.name for p in PROBE_RECORDS]


@pytest.mark.parametrize("path", PROBE_RECORDS, ids=lambda p: p.name)
def test_a_probe_record_is_quoted_with_the_command_that_wrote_it(path: Path) -> None:
    """The docs and benchmarks/results/README.md quote each record's command, on one line,
    and that command wrote this file."""
    command = _probe_command(path)
    assert command.endswith(f"--json benchmarks/results/{path.name}"), command
    assert command in (RESULTS / "README.md").read_text(encoding="utf-8")
    docs = [p.read_text(encoding="utf-8") for p in (RESULTS.parents[1] / "docs").glob("*.md")]
    assert any(command in doc for doc in docs), f"no doc in docs/ quotes `{command}`"


QUOTED_PROBE = re.compile(r"`(python benchmarks/probes/[\w.]+\.py[^`]*)`")


def test_every_quoted_probe_run_writes_its_results_file_with_json() -> None:
    """Where docs/ or benchmarks/results/README.md quote a probe's command that writes a
    results file, it names the file with ``--json``, the one way every probe takes it."""
    texts = [p.read_text(encoding="utf-8") for p in (RESULTS.parents[1] / "docs").glob("*.md")]
    texts.append((RESULTS / "README.md").read_text(encoding="utf-8"))
    quoted = {command for text in texts for command in QUOTED_PROBE.findall(text)}
    writing = sorted(command for command in quoted if "benchmarks/results/" in command)
    assert len(writing) >= 10, writing
    for command in writing:
        assert re.search(r" --json benchmarks/results/[\w.-]+\.json$", command), command
