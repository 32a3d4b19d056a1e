"""DSD's *Where the paper is wrong* rows that need the run (SEED-NOTES §4.4 items 5 and 6:
one configuration judged against two printed results), the reproductions' help naming the
paper, and a stopped run leaving nothing that a rerun to the same ``--out`` refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import edgespec.reproduce.dsd.runs as dsd_runs
import edgespec.reproduce.jobs as jobs
from edgespec.cli import build_parser
from edgespec.reproduce.command import run_folder
from edgespec.reproduce.dsd.load import FITTED_THROUGHPUT
from edgespec.reproduce.dsd.paper_errors import paper_errors, run_paper_errors
from edgespec.reproduce.dsd.report import reproduce as reproduce_dsd
from edgespec.reproduce.dsd.runs import DsdPlan, results_from_dict
from edgespec.reproduce.zhu.report import reproduce as reproduce_zhu

FULL_DSD = Path(__file__).parents[3] / "benchmarks" / "results" / "reproduce-dsd-full.json"


def test_s4_and_c1_awc_are_one_run_judged_against_two_printed_results() -> None:
    results = results_from_dict(json.loads(FULL_DSD.read_text()), DsdPlan.full())
    assert [e.markdown() for e in run_paper_errors(results)] == [
        "- **D2, D4 (Fig. 5 S4 = Table 2 GSM8K C1 AWC)**: the paper says (Fig. 5) S4 on GSM8K "
        "gives 28.1 req/s, TTFT 345 ms, TPOT 37 ms; (Table 2) GSM8K C1 AWC gives 28.3 req/s, "
        "347 ms, 36.2 ms; both are jsq + lab + awc with 20 targets, 600 drafts and RTT 10 ms "
        "on GSM8K: one configuration, two results. Here it is one run, judged in D2 against "
        "Fig. 5's numbers and in D4 against Table 2's: physical 22.94 req/s, TTFT 259.9 ms, "
        "TPOT 59.24 ms; dsdsim_compat 27.37 req/s, TTFT 83.6 ms, TPOT 38.29 ms. Likewise S2 "
        "(jsq + lab + static) is Table 2's C1 Static, judged in D4 against 25.8 req/s, 352 "
        "ms, 40.1 ms (the think time is fitted to it) and in D2's chain, where Fig. 5 prints "
        "no S2 value: physical 23.38 req/s, TTFT 207.4 ms, TPOT 55.36 ms; dsdsim_compat 29.90 "
        "req/s, TTFT 109.3 ms, TPOT 28.31 ms.",
    ]
    # runs that are not the same summary are not shown as one
    physical = results[0]
    other = dict(physical.runs) | {"stack-s4": physical.runs["stack-s2"]}
    shown = run_paper_errors([dsd_runs.DsdResults(physical.plan, other)])[0].instead
    assert "Table 2's: not run. Likewise" in shown
    # a quick run prints its own numbers, and says they are not compared
    quick = dsd_runs.DsdResults(DsdPlan.quick(), dict(physical.runs))
    shown = run_paper_errors([quick])[0].instead
    assert (
        "Table 2's: physical 22.94 req/s, TTFT 259.9 ms, TPOT 59.24 ms; (quick run: 0.25 of "
        "the fleet, 40 s runs, not compared with the paper's). Likewise"
    ) in shown


def test_the_hardware_lists_of_section_5_and_fig_5_are_a_known_error() -> None:
    assert paper_errors()[-1].markdown() == (
        "- **D1–D7 (hardware, §5 vs Fig. 5)**: the paper says (§5) the edge runs Qwen-7B and "
        "Llama2-7B on A40, the cloud Llama2-70B on A100 and Qwen-72B on H100; (Fig. 5) the "
        "cloud pool is LLaMA2-70B, LLaMA3-70B and Qwen-72B on 4×A100, 4×H100 and 4×A6000, "
        "the edge pool A40 + V100 serving LLaMA2-7B, Qwen-7B and LLaMA-3.1-8B; the two lists "
        "differ (a third target model, A6000 and V100 only in Fig. 5), and neither says which "
        "draft family pairs with which target (tokenizers). Every run uses Fig. 5's: targets "
        "7 llama2-70b on 4xa100, 7 qwen-72b on 4xh100, 6 llama3-70b on 4xa6000; drafts a40 + "
        "v100 serving llama2-7b, qwen-7b, llama3-8b, any draft routed to any target."
    )


def test_the_fitted_throughput_setting_defines_its_bound() -> None:
    assert FITTED_THROUGHPUT == (
        "shown, not judged: the think time is fitted to Table 2's GSM8K C1 Static throughput "
        "(load.py), and a closed loop of 600 drafts in this configuration cannot exceed 600 "
        "drafts over that mean think time (Little's law: throughput ≤ drafts / think time), "
        "inside ±50% of the paper's"
    )


@pytest.mark.parametrize("paper", ["zhu", "dsd", "wisv-real-pair"])
def test_help_names_the_paper_and_its_workers(
    paper: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # no line breaks inside a name
    with pytest.raises(SystemExit):
        build_parser().parse_args(["reproduce", paper, "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert f"(default runs/reproduce-{paper}-<time>)" in shown and "PAPER-" not in shown
    workers = "1 only: the models load once, in one process (default 1)"
    assert (workers in shown) == (paper == "wisv-real-pair")
    assert ("wisv-real-pair" in shown) == (paper == "wisv-real-pair")


def _interrupt(*args: object, **kwargs: object) -> object:
    raise KeyboardInterrupt


def test_a_stopped_dsd_run_leaves_nothing_a_rerun_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C after the scenario files are written, before any run finishes."""
    monkeypatch.setattr(dsd_runs, "run_all", _interrupt)
    new = tmp_path / "new" / "run"
    with pytest.raises(KeyboardInterrupt):
        reproduce_dsd(new, quick=True, workers=1, progress=False, command="test")
    assert not (tmp_path / "new").exists()  # the folders it made, gone again
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "notes.txt").write_text("mine\n")
    with pytest.raises(KeyboardInterrupt):
        reproduce_dsd(kept, quick=True, workers=1, progress=False, command="test")
    assert sorted(p.name for p in kept.iterdir()) == ["notes.txt"]
    assert run_folder("dsd", kept, overwrite=False) == kept  # not refused


def test_a_stopped_zhu_run_leaves_no_empty_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jobs, "run_all", _interrupt)
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        reproduce_zhu(out, quick=True, workers=1, progress=False, command="test")
    assert not out.exists()
