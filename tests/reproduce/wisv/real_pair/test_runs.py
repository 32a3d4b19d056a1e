"""The real-pair runs' pieces (stop rules, the stopping verifier, the plan, a cell's
metrics) and a quick reproduction end to end on tiny models with a hand-built head."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgespec.core.types import SamplingParams, VerifyResult
from edgespec.reproduce.claims import Outcome
from edgespec.reproduce.wisv.real_pair.answers import (
    AnswerRun,
    StopAtAnswer,
    stop_prefix,
    summarise,
)
from edgespec.reproduce.wisv.real_pair.report import reproduce, v5_table, v6_table, write_outputs
from edgespec.reproduce.wisv.real_pair.runs import Plan, left_out
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyOutcome, VerifyReply
from tests.reproduce.reports import check_left_out_last
from tests.reproduce.wisv.real_pair.tiny import TokenOutcome, tiny_loader

torch = pytest.importorskip("torch")


def test_stop_prefix_cuts_at_the_first_stop() -> None:
    outcome = TokenOutcome()  # final at 12 tokens
    out = tuple(range(20))
    assert stop_prefix(out, outcome, frozenset(), 128) == out[:12]
    assert stop_prefix(out, outcome, frozenset({5}), 128) == out[:6]  # EOS first
    assert stop_prefix(out, outcome, frozenset(), 8) == out[:8]  # token budget first
    assert stop_prefix(out[:7], outcome, frozenset(), 128) == out[:7]  # never stops


class _Replies:
    """A verifier committing 5 tokens per call, never finished itself."""

    def __init__(self) -> None:
        self.opened: list[str] = []
        self.closed: list[str] = []

    def open(self, spec: SessionSpec) -> None:
        self.opened.append(spec.session_id)

    def verify(self, call: VerifyCall) -> VerifyReply:
        result = VerifyResult(4, 4, None, 9, (1, 2, 3, 4))
        outcome = VerifyOutcome(result, (1, 2, 3, 4, 9), False, 5)
        return VerifyReply(outcome, 0.0, 0.01, 1)

    def close(self, session_id: str) -> None:
        self.closed.append(session_id)


def test_stop_at_answer_finishes_the_round_that_makes_the_answer_final() -> None:
    inner = _Replies()
    verifier = StopAtAnswer(inner, TokenOutcome())
    spec = SessionSpec("s", "edge-0", (1, 2, 3), SamplingParams())
    verifier.open(spec)
    call = VerifyCall("s", 3, (1, 2, 3, 4))
    finished = [verifier.verify(call).outcome.finished for _ in range(3)]
    assert finished == [False, False, True]  # 5, 10, 15 tokens: final at 12
    verifier.close("s")
    assert inner.opened == inner.closed == ["s"]


def test_a_plan_needs_threshold_0_and_v6_prompts_among_v5s() -> None:
    with pytest.raises(ValueError, match="threshold 0"):
        Plan(2, (4, 12), 1, (172.0,), (4,))
    with pytest.raises(ValueError, match="v6_prompts <= prompts"):
        Plan(2, (0, 12), 3, (172.0,), (4,))
    full = Plan.full()
    as_json = json.loads(json.dumps({k: getattr(full, k) for k in full.__dataclass_fields__}))
    assert Plan.from_dict(as_json) == full


def test_summarise_pools_tokens_over_rounds() -> None:
    runs = [
        AnswerRun(0, "7", True, True, True, 20, 10, 2.0, 0, 10, "fh"),
        AnswerRun(1, "8", False, False, True, 10, 2, 0.5, 3, 3, "fh"),
    ]
    cell = summarise(runs)
    assert cell["agreement"] == 0.5 and cell["identical"] == 0.5
    assert cell["aal"] == 30 / 12  # Eq. 20: Σ tokens / Σ rounds
    assert cell["rounds"] == 6.0 and cell["tokens_per_answer"] == 15.0
    assert cell["tokens_per_s"] == 30 / 2.5 and cell["latency_s"] == 1.25
    assert cell["accepted_mismatches"] == 1.5 and cell["exchanges_per_round"] == 13 / 12
    assert cell["upload"] == ["fh"]


def test_quick_reproduction_on_tiny_models(tmp_path: Path) -> None:
    """The tiny head rejects every mismatch on the good channel (lossless at T = 12) and
    accepts every one on the poor channel; V6 behind a 20 ms link picks FH."""
    out = tmp_path / "run"
    rows = reproduce(out, quick=True, workers=1, progress=False, command="edgespec x",
                     load=tiny_loader)  # fmt: skip
    results = json.loads((out / "results.json").read_text())
    cells = {(c["threshold"], c["channel"]): c for c in results["v5"]["cells"]}
    assert set(cells) == {(0, "poor"), (0, "good"), (12, "poor"), (12, "good")}
    assert cells[0, "poor"] == {**cells[0, "good"], "channel": "poor", "uplink_mbps": 20.0}
    assert cells[0, "poor"]["identical"] == cells[0, "poor"]["agreement"] == 1.0
    assert cells[12, "good"]["identical"] == 1.0
    assert cells[12, "good"]["accepted_mismatches"] == 0.0
    assert cells[12, "poor"]["accepted_mismatches"] > 0
    assert cells[12, "poor"]["aal"] > cells[0, "poor"]["aal"]
    runs = results["v5"]["runs"]
    assert len(runs) == 2 * 3 and all(r["stopped"] for r in runs)
    v6 = results["v6"]["cells"]
    assert {(c["window"], c["method"]) for c in v6} == {
        (4, "greedy"), (4, "wisv"), (16, "greedy"), (16, "wisv")
    }  # fmt: skip
    assert all(c["upload"] == (["fh"] if c["method"] == "wisv" else []) for c in v6)
    assert all(c["identical"] == 1.0 for c in v6 if c["method"] == "greedy")
    report = (out / "REPORT.md").read_text()
    assert "**Quick run** (`--quick`)" in report and "Command: `edgespec x`" in report
    assert v5_table(results) in report and v6_table(results) in report
    check_left_out_last(report, left_out(Plan.quick()))
    assert "\n- V5 at T = 4, 8, 14 and 16: not run, only T = 0 and 12\n" in report
    assert rows[0].what.startswith("T = 0") and rows[0].outcome is Outcome.HOLDS
    upload = next(r for r in rows if "adaptive upload" in r.what)
    assert upload.outcome is Outcome.BY_CONSTRUCTION
    # the report is rebuilt from the saved results alone, identically
    again = tmp_path / "again"
    again.mkdir()
    assert write_outputs(again, results) == rows
    assert (again / "REPORT.md").read_text() == report
