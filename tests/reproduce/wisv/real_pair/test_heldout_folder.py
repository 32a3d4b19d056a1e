"""The held-out check's run folder, through ``edgespec reproduce wisv-heldout`` on the tiny
pair (:mod:`tests.reproduce.wisv.real_pair.tiny`, in place of Gemma): a torn last line of
``heldout.jsonl`` is dropped and its prompt run again, any other bad line refused naming
FILE:LINE; a folder of another plan, or holding another run's files, is refused before
the pair loads, naming what differs or what is in the way; ``--overwrite`` starts again."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import edgespec.reproduce.wisv.real_pair.report as report
from edgespec.cli import main as cli_main
from edgespec.errors import UserInputError
from edgespec.output_paths import OVERWRITE_NEEDS_OUT, claim_folder
from edgespec.reproduce.wisv.real_pair.heldout_folder import (
    HELDOUT_FILES,
    HeldoutPlan,
    claim_heldout_folder,
    head_identity,
)
from edgespec.reproduce.wisv.real_pair.heldout_plan import QUICK, check_plan
from edgespec.reproduce.wisv.real_pair.runs import Plan
from tests.reproduce.wisv.real_pair.tiny import tiny_loader

HELDOUT = ["reproduce", "wisv-heldout"]


def main(argv: list[str]) -> int:
    """``edgespec ARGV``, with ``sys.argv`` its own: the command line a run records."""
    saved = sys.argv
    sys.argv = ["edgespec", *argv]
    try:
        return cli_main(argv)
    finally:
        sys.argv = saved


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The tiny pair in place of Gemma; each load appends its plan's prompt count."""
    counted: list[int] = []

    def load(plan: Plan, head: Path | None = None) -> Any:
        counted.append(plan.prompts)
        return tiny_loader(plan)

    monkeypatch.setattr(report, "load_real_pair", load)
    yield counted


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_torn_last_line_is_dropped_and_its_prompt_runs_again(
    tmp_path: Path, loads: list[int], capsys: pytest.CaptureFixture[str]
) -> None:
    """A run stopped while appending prompt 1 leaves its line cut short: it was a
    JSONDecodeError traceback; now it is dropped (one line on stderr) and prompt 1 runs
    again, appended after prompt 0's whole line."""
    out = tmp_path / "h"
    assert main([*HELDOUT, "--quick", "--out", str(out)]) == 0
    records = out / "heldout.jsonl"
    first, second = records.read_text().splitlines()
    records.write_text(first + "\n" + second[:40])  # killed during the append
    capsys.readouterr()
    assert main([*HELDOUT, "--quick", "--out", str(out)]) == 0
    assert capsys.readouterr().err == (
        f"edgespec reproduce wisv-heldout: {records}:2: dropped a torn last line (a run "
        "stopped while writing it); its prompt runs again\n"
    )
    assert loads == [2, 2]  # the second run loaded the pair for prompt 1 only
    again = [json.loads(line) for line in records.read_text().splitlines()]
    assert records.read_text().splitlines()[0] == first and len(again) == 2
    redone, before = again[1], json.loads(second)
    assert redone["prompt"] == before["prompt"] == 1
    assert [(r["threshold"], r["channel"], r["tokens"], r["answer"]) for r in redone["runs"]] == [
        (r["threshold"], r["channel"], r["tokens"], r["answer"]) for r in before["runs"]
    ]


RUN = {"prompt": 0, "threshold": 0, "channel": "either", "agrees": True, "identical": True,
       "tokens": 4, "rounds": 2, "seconds": 1.0}  # fmt: skip
GOOD = json.dumps({"prompt": 0, "target_only": {"tokens": 4, "seconds": 2.0}, "runs": [RUN]})


@pytest.mark.parametrize(
    ("text", "where", "problem"),
    [
        (f"{GOOD}\nnot json\n{GOOD}\n", 2, "not JSON (Expecting value)"),
        # a line cut short but not the last one: not an interrupted append
        ('{"prompt": 1, "he\n' + GOOD + "\n", 1,
         "not JSON (Unterminated string starting at)"),
        ('{"prompt": 0, "head": {}}\n{"prompt": 1, "he', 1,
         'not a held-out record: no "target_only" with "tokens" and "seconds"'),
        (f"{GOOD}\n[1, 2]\n", 2, "not a held-out record: not a JSON object"),
        ('{"prompt": "0"}\n', 1, 'not a held-out record: no integer "prompt"'),
        ('{"prompt": 0, "target_only": {"tokens": 4, "seconds": 2.0}, "runs": []}\n', 1,
         'not a held-out record: no "runs" list'),
        ('{"prompt": 0, "target_only": {"tokens": 4, "seconds": 2.0}, "runs": [{"threshold": '
         '0}]}\n', 1, 'not a held-out record: run 0 has no "prompt"'),
    ],
)  # fmt: skip
def test_any_other_bad_line_is_refused_naming_file_and_line(
    tmp_path: Path,
    loads: list[int],
    capsys: pytest.CaptureFixture[str],
    text: str,
    where: int,
    problem: str,
) -> None:
    out = tmp_path / "h"
    head = head_identity(None)
    plan = HeldoutPlan(True, QUICK.num_prompts, QUICK.thresholds, QUICK.lossy_prompts,
                       head["file"], head["sha256"], "cmd")  # fmt: skip
    claim_heldout_folder(out, tmp_path / "unused", plan, overwrite=False)
    (out / "heldout.jsonl").write_text(text)
    assert main([*HELDOUT, "--quick", "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"edgespec reproduce wisv-heldout: {out / 'heldout.jsonl'}:{where}: {problem}\n"
    )
    assert loads == [] and (out / "heldout.jsonl").read_text() == text
    assert not (out / "REPORT.md").exists()


def test_another_plan_is_refused_naming_what_differs(
    tmp_path: Path, loads: list[int], capsys: pytest.CaptureFixture[str]
) -> None:
    """A --quick folder (T = 12 only) continued as the full check's first 2 prompts ran
    nothing and wrote an agreement file without T = 1 to 8 under the new command."""
    out = tmp_path / "h"
    started = [*HELDOUT, "--quick", "--out", str(out)]
    assert main(started) == 0
    before = _files(out)
    capsys.readouterr()
    assert main([*HELDOUT, "--prompts", "2", "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        "edgespec reproduce wisv-heldout: "
        f"--out {out} holds a check started under another plan (the quick "
        "check, not the full one; T = 12, not T = 1, 2, 4, 8, 12: `edgespec reproduce "
        f"wisv-heldout --quick --out {out}`): rerun that command to continue it, give another "
        "--out, or --overwrite to start again\n"
    )
    assert _files(out) == before and loads == [2]
    assert sorted(before) == sorted(HELDOUT_FILES)
    assert main(started) == 0  # the same plan continues: both prompts are done, nothing loads
    assert loads == [2]


@pytest.mark.parametrize(
    ("first", "then", "differs"),
    [
        (["--prompts", "1"], [], "1 prompt, not 2"),
        (["--lossy-prompts", "1"], [], "lossy prompts 1, not all"),
        ([], ["--head", "HEAD"], "head SHIPPED, not HEAD"),
    ],
)
def test_each_difference_is_named(
    tmp_path: Path,
    loads: list[int],
    capsys: pytest.CaptureFixture[str],
    first: list[str],
    then: list[str],
    differs: str,
) -> None:
    candidate = tmp_path / "cand-head.json"  # the shipped head's bytes and one more newline
    candidate.write_bytes(report.shipped_head_path().read_bytes() + b"\n")
    out = tmp_path / "h"
    started = [*HELDOUT, "--quick", "--out", str(out), *first]
    assert main(started) == 0
    capsys.readouterr()
    again = [*HELDOUT, "--quick", "--out", str(out), *then]
    assert main([a.replace("HEAD", str(candidate)) for a in again]) == 2
    named = differs.replace("SHIPPED", str(report.shipped_head_path()))
    assert capsys.readouterr().err == (
        f"edgespec reproduce wisv-heldout: --out {out} holds a check started under another plan "
        f"({named.replace('HEAD', str(candidate))}: `edgespec reproduce "
        f"{' '.join(started[1:])}`): rerun that command to continue it, give another --out, "
        "or --overwrite to start again\n"
    )
    assert len(loads) == 1


def _claim_refusal(out: Path) -> str:
    with pytest.raises(UserInputError) as refused:
        claim_folder(out, out / "unused", HELDOUT_FILES, overwrite=False)
    return str(refused.value)


def test_another_runs_files_are_refused_unless_overwrite(
    tmp_path: Path, loads: list[int], capsys: pytest.CaptureFixture[str]
) -> None:
    """A copy of a zhu run's folder as --out: its REPORT.md was silently replaced. It is
    refused before the pair loads; --overwrite replaces this check's files only."""
    out = tmp_path / "zh"
    out.mkdir()
    (out / "REPORT.md").write_text("# zhu\n")
    (out / "results.json").write_text("{}\n")
    refusal = _claim_refusal(out)
    assert "REPORT.md" in refusal and "results.json" not in refusal
    assert main([*HELDOUT, "--quick", "--prompts", "1", "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"edgespec reproduce wisv-heldout: {refusal}\n"
    assert _files(out) == {"REPORT.md": b"# zhu\n", "results.json": b"{}\n"} and loads == []
    argv = [*HELDOUT, "--quick", "--prompts", "1", "--out", str(out), "--overwrite"]
    assert main(argv) == 0 and loads == [1]
    assert (out / "REPORT.md").read_text().startswith("# WISV's shipped default")
    assert (out / "results.json").read_text() == "{}\n"
    assert len((out / "heldout.jsonl").read_text().splitlines()) == 1
    # the check of another plan starts again under --overwrite: its records removed first
    assert main([*HELDOUT, "--quick", "--out", str(out), "--overwrite"]) == 0
    assert loads == [1, 2] and len((out / "heldout.jsonl").read_text().splitlines()) == 2
    assert HeldoutPlan.read(out / "heldout-plan.json").num_prompts == 2


def test_a_check_from_before_plans_were_recorded_is_refused(
    tmp_path: Path, loads: list[int], capsys: pytest.CaptureFixture[str]
) -> None:
    """Its records say nothing of the plan they ran: continuing it could mix two plans."""
    out = tmp_path / "old"
    out.mkdir()
    (out / "heldout.jsonl").write_text(GOOD + "\n")
    refusal = _claim_refusal(out)
    assert "heldout.jsonl" in refusal
    assert main([*HELDOUT, "--quick", "--out", str(out)]) == 2
    assert (
        capsys.readouterr().err == (f"edgespec reproduce wisv-heldout: {refusal}\n") and loads == []
    )
    assert main([*HELDOUT, "--quick", "--overwrite"]) == 2
    assert capsys.readouterr().err == f"edgespec reproduce wisv-heldout: {OVERWRITE_NEEDS_OUT}\n"
    assert check_plan(True, None, None) == QUICK


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b'{"quick": ', "not a settings file (not valid JSON: Expecting value)"),
        (b" " * 70_000, "not a settings file (over 65,536 bytes)"),
        (b'{"quick": true}', "not a held-out check's plan (KeyError('lossy_prompts'))"),
    ],
)
def test_a_plan_that_is_not_one_is_named_before_the_pair_loads(
    tmp_path: Path,
    loads: list[int],
    capsys: pytest.CaptureFixture[str],
    content: bytes,
    problem: str,
) -> None:
    """Read as every settings record is (edgespec.learn.run_settings): within a bound, not
    JSON named as such (it was "not a held-out check's plan (JSONDecodeError(...))")."""
    out = tmp_path / "h"
    out.mkdir()
    (out / "heldout-plan.json").write_bytes(content)
    assert main([*HELDOUT, "--quick", "--out", str(out)]) == 2
    plan = out / "heldout-plan.json"
    assert capsys.readouterr().err == f"edgespec reproduce wisv-heldout: {plan}: {problem}\n"
    assert loads == []
