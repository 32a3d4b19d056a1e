"""Claim W9 (Table 7): Eq. 19's held-out fit judged on hand-built samples (exactly additive,
biased, noisy), and on the bundled real profile (the same row in every run)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.profiling.residuals import Point
from edgespec.profiling.samples import MeasuredSamples, load_samples
from edgespec.reproduce.claims import Cause, ClaimRow, Outcome
from edgespec.reproduce.wisp.estimator import (
    check_estimator,
    estimator_choice,
    estimator_dict,
    insert_w9,
    w9_rows,
)

COEFFICIENTS = (4e-3, 1e-8, 5e-4, 0.05)
"""a, b_compute, b_read, c of the hand-built samples (s per token / interaction / cached token)."""


def eq19(entries: tuple[tuple[int, int], ...]) -> float:
    a, b_c, b_r, c = COEFFICIENTS
    linear = sum(n for n, _ in entries)
    interactions = sum((n + cached) * n for n, cached in entries)
    return a * linear + b_c * interactions + b_r * sum(cached for _, cached in entries) + c


def additive(test_scale: float = 1.0, noise: float = 0.0) -> list[Point]:
    """64 configurations, every fourth held out; times exactly Eq. 19, the held-out ones
    times ``test_scale`` and ± ``noise``: held-out configurations come in pairs of one shape,
    one + and one −, so the noise alone leaves the mean residual at 0."""
    out = []
    for i in range(64):
        split = "test" if i % 4 == 0 else "train"
        shape = i - 4 if i % 8 == 4 else i  # 4 shares 0's shape, 12 shares 8's, ...
        entries = ((1 + (shape * 7) % 50, (shape * 131) % 900),) * (1 + shape % 4)
        scale = test_scale * (1 + noise * (-1) ** (i // 4)) if split == "test" else 1.0
        category = ("compute", "memory", "mixed")[i % 3]
        out.append(Point(category, split, entries, eq19(entries) * scale))
    return out


BIASED = (
    "mean residual +7.4% of the mean time, beyond ±3% (under-predicted; its 95% interval +5.5% "
    "to +9.4% excludes 0)"
)
"""The miss of :func:`additive` with ``test_scale=1.08``: every held-out time 8% above."""


def samples(pts: list[Point]) -> MeasuredSamples:
    return MeasuredSamples(
        "edgespec profile --target gemma3-270m", "gemma3-270m", "a 2-core CPU", "2026-11-29",
        "edgespec", "train 48, test 16", tuple(pts), 2, 1.5, "hand-built",
    )  # fmt: skip


def rows(pts: list[Point]) -> tuple[ClaimRow, ClaimRow]:
    setting, fit = w9_rows(check_estimator(pts), samples(pts))
    return setting, fit


def test_exactly_additive_samples_hold_and_recover_the_coefficients() -> None:
    check = check_estimator(additive())
    assert check.fit.values == pytest.approx(COEFFICIENTS, rel=1e-6)
    assert check.misses == ()
    assert check.fit.test.mape_pct == pytest.approx(0.0, abs=1e-9)
    setting, fit = rows(additive())
    assert setting.outcome is Outcome.SETTING
    assert setting.setting == (
        "the hardware: gemma3-270m on a 2-core CPU, against an A100 with Qwen3-32B under vLLM "
        "(App. C)"
    )
    assert setting.ours.startswith("a 4000.0 µs/token [4000.0, 4000.0], b_compute 0.0100 µs")
    assert (fit.direction_ok, fit.magnitude_ok, fit.outcome) == (None, True, Outcome.HOLDS)
    assert fit.why == "" and fit.reason is None
    assert fit.tolerance == "MAPE ≤ 10%, R² ≥ 0.95, mean residual within ±3% of the mean time"
    assert fit.paper == (
        "R² 0.992, MAE 3.38 ms, MAPE 4.93%, n = 50 (an A100 with Qwen3-32B under vLLM (App. C))"
    )
    assert fit.ours.startswith("R² 1.000 [1.000, 1.000], MAE 0.00 ms, MAPE 0.00% [0.00, 0.00]")
    assert fit.ours.endswith("n = 16")


def test_a_biased_held_out_set_misses_on_its_mean_residual_alone() -> None:
    # held out 8% slower than the training configurations' exact fit: residual 0.08/1.08
    check = check_estimator(additive(test_scale=1.08))
    assert check.bias_pct == pytest.approx(100 * 0.08 / 1.08)
    assert check.fit.test.mape_pct == pytest.approx(100 * 0.08 / 1.08)  # within 10%
    assert check.fit.test.r2 >= 0.95
    assert check.misses == (BIASED,)
    _, fit = rows(additive(test_scale=1.08))
    assert (fit.magnitude_ok, fit.outcome) == (False, Outcome.MISS)
    assert fit.cause is Cause.MODELLING
    assert fit.why.startswith(
        f"a modelling difference — {BIASED}. Eq. 19 counts each request's own tokens, as the "
        "paper's GPU serving engine runs them; on gemma3-270m, on the machine that measured "
        "the samples (hand-built; W9 samples, below), the held-out "
    )
    assert "while a configuration's runs differ by 1.5% (median). Refitted on the " in fit.why
    # over-predicted: residual −0.032/0.968 = −3.3% misses too, −0.028/0.972 = −2.9% does not
    assert check_estimator(additive(test_scale=0.968)).misses == (
        "mean residual -3.3% of the mean time, beyond ±3% (over-predicted; its 95% interval "
        "-4.2% to -2.4% excludes 0)",
    )
    assert check_estimator(additive(test_scale=0.972)).misses == ()


def test_a_bias_whose_interval_includes_zero_is_not_a_miss() -> None:
    """The bias criterion is about whether there is one: a mean residual beyond ±3% whose
    bootstrap 95% interval includes 0 shows none, so it is no miss of the bias (the bundled
    samples. −5.2% in [−11.2%, +1.0%] was). The same point estimate with an interval
    without 0 is one (:func:`test_a_biased_held_out_set_misses_on_its_mean_residual_alone`)."""
    check = check_estimator(additive(test_scale=1.08))
    wide = dataclasses.replace(check, residual_interval_s=(-0.5 * check.mean_time_s, 0.2))
    assert wide.bias_pct == check.bias_pct and not abs(wide.bias_pct) <= 3.0
    assert (wide.biased, wide.misses) == (False, ())
    assert wide.bias_note() == (
        "mean residual +7.4% of the mean time, beyond ±3%, but its 95% interval includes 0: "
        "no bias shown, not a miss"
    )
    _, fit = w9_rows(wide, samples(additive(test_scale=1.08)))
    assert (fit.magnitude_ok, fit.outcome) == (True, Outcome.HOLDS)
    assert fit.note.startswith(wide.bias_note() + "; training: ours R² ")
    # an interval touching 0 includes it; one just above 0 does not
    assert not dataclasses.replace(check, residual_interval_s=(0.0, 1.0)).biased
    assert dataclasses.replace(check, residual_interval_s=(1e-9, 1.0)).biased
    assert check.bias_note() == "" and check.biased  # the interval +5.5% to +9.4%


def test_noisy_samples_miss_on_mape_and_r2_without_bias() -> None:
    check = check_estimator(additive(noise=0.3))
    assert check.bias_pct == pytest.approx(0.0, abs=1e-9)
    assert check.misses == (
        f"held-out R² {check.fit.test.r2:.3f} < 0.95",
        f"held-out MAPE {check.fit.test.mape_pct:.1f}% > 10%",
    )
    assert check.fit.test.r2 < 0.95 and check.fit.test.mape_pct > 10
    _, fit = rows(additive(noise=0.3))
    assert fit.outcome is Outcome.MISS
    assert fit.why.startswith(f"a modelling difference — held-out R² {check.fit.test.r2:.3f}")
    # a little noise is within the criterion
    assert check_estimator(additive(noise=0.02)).misses == ()


def test_the_check_needs_both_splits() -> None:
    only_train = [dataclasses.replace(p, split="train") for p in additive()]
    with pytest.raises(ValueError, match="need ≥ 4 training and ≥ 2 held-out points, got 64/0"):
        check_estimator(only_train)


def test_w9_goes_before_w10() -> None:
    def row(claim: str) -> ClaimRow:
        return ClaimRow(claim, "", "", "", "", True, None)

    w9 = [row("W9"), row("W9")]
    assert [r.claim_id for r in insert_w9([row("W8"), row("W10")], w9)] == [
        "W8", "W9", "W9", "W10"
    ]  # fmt: skip
    assert [r.claim_id for r in insert_w9([row("W8")], w9)] == ["W8", "W9", "W9"]


def _report(folder: Path) -> Path:
    """An ``edgespec profile`` NAME-report.json of :func:`additive`'s samples, held-out
    ones 8% slower, in ``folder``."""
    report = {
        "command": "edgespec profile --target tiny",
        "target": "tiny",
        "hardware": "a CPU",
        "samples": [
            {"config": i, "category": p.category, "split": p.split, "run": 0,
             "entries": [list(e) for e in p.entries], "time_s": p.time_s}
            for i, p in enumerate(additive(test_scale=1.08))
        ],
    }  # fmt: skip
    path = folder / "gemma-report.json"
    path.write_text(json.dumps(report))
    return path


def test_the_command_judges_a_profile_measured_here(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``edgespec reproduce wisp-estimator --samples REPORT``: a fresh profile's report."""
    path = _report(tmp_path)
    argv = ["reproduce", "wisp-estimator", "--samples", str(path), "--json", str(tmp_path / "e")]
    assert main(argv) == 0
    out = " ".join(capsys.readouterr().out.split())  # the printed table wraps its cells
    assert "2 rows: 0 hold, 0 hold in direction only, 1 miss, 1 setting" in out
    assert BIASED in out
    data = json.loads((tmp_path / "e").read_text())
    # the report's samples saved in the bundled form give the same check
    saved = tmp_path / "s.json"
    argv += ["--save-samples", str(saved), "--machine", "a CPU", "--date", "2026-11-29"]
    assert main(argv) == 0
    assert capsys.readouterr().out.endswith(
        f"wrote {saved}: 64 samples; train 48 (16 compute, "
        "16 memory, 16 mixed); test 16 (6 compute, 5 "
        "memory, 5 mixed); 1 timed runs per configuration\n"
    )
    assert load_samples(saved).measured_on == "2026-11-29"
    assert check_estimator(load_samples(saved).points) == check_estimator(load_samples(path).points)
    assert data["misses"] == [BIASED]
    assert data["samples"]["source"] == str(path) and data["samples"]["machine"] == "a CPU"


def test_the_bundled_samples_give_the_same_row_every_run() -> None:
    """The shipped profile (Gemma 3 270M, 2-core CPU, CPU clock): W9 misses on all three
    criteria, the same numbers in every run (the fit and its bootstraps are seeded)."""
    shipped = load_samples()
    first = w9_rows(check_estimator(shipped.points), shipped)
    assert w9_rows(check_estimator(load_samples().points), load_samples()) == first
    assert shipped.source == "bundled gemma3-270m-cpu.json" and shipped.target == "gemma3-270m"
    assert [sum(p.split == s for p in shipped.points) for s in ("train", "test")] == [118, 50]
    assert shipped.command.startswith("edgespec profile --target gemma3-270m --scale 0.15")
    assert shipped.code.startswith("edgespec bfd516d with --clock (d796c6b): ")
    setting, fit = first
    assert setting.outcome is Outcome.SETTING
    assert setting.ours == (
        "a 6971.3 µs/token [5529.7, 8340.8], b_compute 4.5013 µs/interaction, b_read 912.28 "
        "µs/cached token, c -239.2 ms"
    )
    assert fit.ours == (
        "R² 0.748 [0.588, 0.831], MAE 281.94 ms, MAPE 26.63% [18.65, 36.26], mean residual "
        "-78.65 ms (-5.2%) [-170.29, +14.57], n = 50"
    )
    assert (fit.outcome, fit.cause) == (Outcome.MISS, Cause.MODELLING)
    # the bias's interval [−170.29, +14.57] ms includes 0: no bias shown, so no miss of it
    assert fit.why.startswith(
        "a modelling difference — held-out R² 0.748 < 0.95; held-out MAPE 26.6% > 10%. Eq. 19 "
        "counts each request's own tokens, as the paper's GPU serving engine runs them; on "
        "gemma3-270m, on the machine that measured the samples (bundled gemma3-270m-cpu.json; "
        "W9 samples, below), the held-out compute_random configurations are over-predicted"
    )
    assert "on this CPU" not in fit.why  # the bundled samples were measured elsewhere
    assert fit.note.startswith(
        "mean residual -5.2% of the mean time, beyond ±3%, but its 95% interval includes 0: "
        "no bias shown, not a miss; training: ours R² "
    )
    # the refit on the passes the backend runs is within the criterion's MAPE and R²
    assert "held-out R² 0.953, MAPE 8.9%, mean residual -4.9%, at 3.09 ms per forwarded " in fit.why
    name, why = estimator_choice(shipped)
    assert name == "W9 samples" and why.startswith("bundled gemma3-270m-cpu.json: train 118 (")
    data = estimator_dict(check_estimator(shipped.points), shipped)
    assert round(data["test"]["mape_pct"], 2) == 26.63 and round(data["bias_pct"], 1) == -5.2
    assert data["misses"] == ["held-out R² 0.748 < 0.95", "held-out MAPE 26.6% > 10%"]


def test_saving_samples_needs_a_report_and_the_machine(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce", "wisp-estimator", "--save-samples", "s.json"]) == 2
    assert capsys.readouterr().err == (
        "edgespec reproduce wisp-estimator: --save-samples needs --samples REPORT and "
        "--machine TEXT\n"
    )


def test_save_samples_is_tried_when_the_flags_are_parsed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--save-samples`` was a plain path, written only after the samples were read and the
    check run: a folder given was found (an ``IsADirectoryError``) at the end."""
    argv = ["reproduce", "wisp-estimator", "--samples", str(tmp_path / "gone.json")]
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--save-samples", str(tmp_path), "--machine", "a CPU"])
    assert stop.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines()[-1] == (
        "edgespec reproduce wisp-estimator: error: argument --save-samples: "
        f"{tmp_path} is a folder; give a file name"
    )


def test_json_and_save_samples_make_their_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Like every output flag: the fit was computed and printed, then the run failed (exit
    2) naming a hidden temporary file, ``[Errno 2] No such file or directory:
    'NEW/.w9.json.PID.tmp'``, and wrote nothing."""
    fit, saved = tmp_path / "new" / "fit" / "w9.json", tmp_path / "other" / "s.json"
    argv = ["reproduce", "wisp-estimator", "--samples", str(_report(tmp_path))]
    argv += ["--json", str(fit), "--save-samples", str(saved), "--machine", "a CPU"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert err == "" and f"wrote {fit}\n" in out and f"wrote {saved}: 64 samples" in out
    assert json.loads(fit.read_text())["samples"]["source"] == str(tmp_path / "gemma-report.json")
    assert load_samples(saved).machine == "a CPU"
    assert sorted(p.name for p in fit.parent.iterdir()) == ["w9.json"]
    assert sorted(p.name for p in saved.parent.iterdir()) == ["s.json"]


def test_json_and_save_samples_at_one_path_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The saved samples replaced the fit (or the other way round), exit 0."""
    both = tmp_path / "x.json"
    argv = ["reproduce", "wisp-estimator", "--samples", str(_report(tmp_path))]
    assert main([*argv, "--json", str(both), "--save-samples", str(both), "--machine", "a"]) == 2
    assert capsys.readouterr().err == (
        f"edgespec reproduce wisp-estimator: --save-samples {both} is also --json's file: the "
        "second would replace the first; give another\n"
    )
    assert not both.exists()
