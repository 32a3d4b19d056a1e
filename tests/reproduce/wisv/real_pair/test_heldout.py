"""The held-out check's summary: agreement and speed-up over exact SD on the same
prompts, per threshold and channel, and the agreement file it writes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.errors import UserInputError
from edgespec.policies.semantic.agreement import load_agreement
from edgespec.policies.semantic.bundled import bundled_dir
from edgespec.reproduce.wisv.real_pair.heldout import agreement_json, reproduce, run, table
from edgespec.reproduce.wisv.real_pair.heldout_folder import (
    HeldoutPlan,
    claim_heldout_folder,
    head_identity,
)
from edgespec.reproduce.wisv.real_pair.heldout_plan import QUICK, CheckPlan, check_plan, left_out
from tests.reproduce.reports import check_left_out_last


def _run(
    prompt: int, t: int, channel: str, agrees: bool, tokens: int, seconds: float
) -> dict[str, Any]:
    return {"prompt": prompt, "threshold": t, "channel": channel, "agrees": agrees,
            "identical": t == 0, "tokens": tokens, "rounds": tokens // 2,
            "seconds": seconds}  # fmt: skip


RECORDS = [
    {"prompt": 0, "target_only": {"tokens": 20, "seconds": 10.0},
     "runs": [_run(0, 0, "either", True, 20, 20.0), _run(0, 12, "poor", False, 10, 2.0)]},
    {"prompt": 1, "target_only": {"tokens": 30, "seconds": 15.0},
     "runs": [_run(1, 0, "either", True, 30, 10.0)]},
]  # fmt: skip


def planted(folder: Path, records: list[dict[str, Any]], quick: bool, prompts: int | None) -> None:
    """``folder`` claimed for the check ``quick`` and ``prompts`` name (with the shipped
    head, command ``cmd``), as a run starts it, holding ``records``."""
    check, head = check_plan(quick, prompts, None), head_identity(None)
    plan = HeldoutPlan(quick, check.num_prompts, check.thresholds, check.lossy_prompts,
                       head["file"], head["sha256"], "cmd")  # fmt: skip
    claim_heldout_folder(folder, folder / "unused", plan, overwrite=False)
    (folder / "heldout.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_speed_up_is_over_exact_sd_on_the_same_prompts() -> None:
    rows = {(r["threshold"], r["channel"]): r for r in table(RECORDS)}
    exact = rows[(0, "either")]
    assert exact["prompts"] == 2 and exact["agreement"] == 1.0
    assert exact["tokens_per_s"] == pytest.approx(50 / 30) and exact["speedup"] == 1.0
    lossy = rows[(12, "poor")]
    # 5 tokens/s against exact SD's 1 token/s on prompt 0 alone
    assert lossy["prompts"] == 1 and lossy["agreement"] == 0.0
    assert lossy["speedup"] == pytest.approx(5.0)


def test_a_finished_check_is_summarised_without_the_models(tmp_path: Path) -> None:
    # the quick check's two prompts are done already: nothing runs, nothing loads
    assert QUICK.num_prompts == len(RECORDS)
    planted(tmp_path, RECORDS, quick=True, prompts=None)
    rows = reproduce(tmp_path, quick=True, command="cmd")
    assert rows == table(RECORDS)
    loaded = load_agreement(tmp_path / "gemma3-270m-agreement.json")
    assert loaded is not None and loaded.default_threshold == 0
    data = json.loads((tmp_path / "gemma3-270m-agreement.json").read_text())
    assert data == agreement_json(rows, "cmd", head_identity(None))
    shipped = bundled_dir() / "gemma3-270m-head.json"  # the head it measured, by name
    digest = hashlib.sha256(shipped.read_bytes()).hexdigest()
    assert data["head"] == {"file": "gemma3-270m-head.json", "sha256": digest}
    assert loaded.head_sha256 == digest
    report = (tmp_path / "REPORT.md").read_text()
    assert "`cmd`" in report and "| 12 | poor | 1 | 0% | 0% | 5.00 | 5.00x | 5.0 | 10.0 |" in report
    assert "With the shipped head." in report and "Default for this head: T = 0" in report


QUICK_LEFT_OUT = [
    "WISV at T = 1, 2, 4 and 8: not run, only T = 12",
    "target-only, exact SD and WISV: 2 prompts (full: 50)",
]


def test_a_quick_checks_report_ends_with_what_it_leaves_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As every other quick report does, read off the quick plan against the full one (it
    had no such section), and printed under the table as theirs is."""
    assert left_out(QUICK) == QUICK_LEFT_OUT
    planted(tmp_path, RECORDS, quick=True, prompts=None)
    reproduce(tmp_path, quick=True, command="cmd")
    report = (tmp_path / "REPORT.md").read_text()
    check_left_out_last(report, QUICK_LEFT_OUT)
    assert report.endswith(
        "at least 95% on both channels.\n\n## What the quick run leaves out\n\n"
        "- WISV at T = 1, 2, 4 and 8: not run, only T = 12\n"
        "- target-only, exact SD and WISV: 2 prompts (full: 50)\n"
    )
    assert capsys.readouterr().out.endswith(
        f"report: {tmp_path / 'REPORT.md'}\n"
        "quick run leaves out (REPORT.md, “What the quick run leaves out”):\n"
        "  - WISV at T = 1, 2, 4 and 8: not run, only T = 12\n"
        "  - target-only, exact SD and WISV: 2 prompts (full: 50)\n"
    )


def test_a_quick_check_cut_further_says_what_it_runs() -> None:
    assert left_out(check_plan(True, 2, 1)) == [
        *QUICK_LEFT_OUT,
        "WISV above T = 0: 1 prompt (full: 50)",
    ]
    assert left_out(check_plan(True, 1, None))[1] == (
        "target-only, exact SD and WISV: 1 prompt (full: 50)"
    )


def test_another_heads_records_stop_the_run_and_name_both(tmp_path: Path) -> None:
    """Records name their head; a run with another head into the same folder stops before
    any model loads (records naming none are the shipped head's)."""
    candidate = tmp_path / "cand-head.json"
    candidate.write_text("{}")
    mine = head_identity(candidate)
    assert mine["file"] == str(candidate) and len(mine["sha256"]) == 64
    (tmp_path / "heldout.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    with pytest.raises(UserInputError, match=r"holds prompt 0 run with the shipped head, not "):
        run(tmp_path / "heldout.jsonl", 2, (12,), None, candidate)
    # the shipped head continues its own folder: both prompts are there, nothing runs
    assert run(tmp_path / "heldout.jsonl", 2, (12,)) == table(RECORDS)
    theirs = [{**r, "head": mine} for r in RECORDS]
    (tmp_path / "heldout.jsonl").write_text("".join(json.dumps(r) + "\n" for r in theirs))
    with pytest.raises(UserInputError, match=r"run with .*cand-head.json, not .*gemma3-270m-head"):
        run(tmp_path / "heldout.jsonl", 2, (12,))
    assert run(tmp_path / "heldout.jsonl", 2, (12,), None, candidate) == table(theirs)


def test_prompts_limits_the_check(tmp_path: Path) -> None:
    planted(tmp_path, RECORDS[:1], quick=False, prompts=1)
    rows = reproduce(tmp_path, quick=False, command="cmd", prompts=1)  # prompt 0 is done
    assert rows == table(RECORDS[:1])
    assert (
        (tmp_path / "REPORT.md")
        .read_text()
        .endswith(  # it said nothing of the 49 others
            "\n\n## What the cut run leaves out\n\n- target-only, exact SD and WISV: 1 prompt "
            "(full: 50)\n"
        )
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [  # were cut silently: the run took fewer prompts than asked
        (["--prompts", "51"], "--prompts 51: the check has 50 prompts"),
        (["--quick", "--prompts", "3"], "--prompts 3: the quick check has 2 prompts"),
        (["--prompts", "5", "--lossy-prompts", "6"], "--lossy-prompts 6: the check runs 5 prompts"),
    ],
)
def test_more_prompts_than_the_check_runs_are_refused_before_it_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    out = tmp_path / "h"
    assert main(["reproduce", "wisv-heldout", "--out", str(out), *flags]) == 2
    assert capsys.readouterr().err == f"edgespec reproduce wisv-heldout: {message}\n"
    assert not out.exists()
    assert check_plan(False, 50, 50) == CheckPlan(50, (1, 2, 4, 8, 12), 50)
    assert check_plan(True, None, None) == CheckPlan(2, (12,), None)


def test_a_full_check_cut_by_its_flags_says_what_it_leaves_out(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--prompts 8`` on the full check printed (and wrote: test_prompts_limits_the_check)
    no word of the 42 prompts it did not run; it says so, as a quick check does."""
    from edgespec.reproduce.printed import print_left_out

    omitted = left_out(check_plan(False, 8, None))
    assert omitted == ["target-only, exact SD and WISV: 8 prompts (full: 50)"]
    print_left_out(omitted, run="cut run")
    assert capsys.readouterr().out == (
        "cut run leaves out (REPORT.md, “What the cut run leaves out”):\n"
        "  - target-only, exact SD and WISV: 8 prompts (full: 50)\n"
    )
    assert left_out(check_plan(False, None, None)) == []  # the full check: no section
