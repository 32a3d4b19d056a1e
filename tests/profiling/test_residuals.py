"""Per-category errors and refits of a profile report (edgespec.profiling.residuals)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.profiling import report_file
from edgespec.profiling import residuals as pr


def _padded_time(entries: list[tuple[int, int]]) -> float:
    size = len(entries)
    new = max(n for n, _ in entries)
    total = max(n + c for n, c in entries)
    return 1e-3 * size * new + 1e-7 * size * new * total + 2e-4 * size * total + 0.05


def _report() -> dict[str, Any]:
    samples = []
    for i in range(40):
        entries = [(1 + (i * 7) % 50, (i * 131) % 900)] + [(1 + i % 5, 100 * (i % 9))] * (i % 4)
        category = ("compute", "memory", "mixed")[i % 3]
        time_s = _padded_time(entries)
        for run, scale in enumerate((1.0, 3.0, 0.999)):  # the median run is the exact time
            samples.append({
                "config": i, "category": category, "split": "test" if i % 4 == 0 else "train",
                "run": run, "entries": entries, "time_s": time_s * scale,
            })  # fmt: skip
    coefficients = {"a_s": 1e-3, "b_compute_s": 1e-7, "b_read_s": 2e-4, "c_s": 0.05}
    return {"wisp": {"coefficients": coefficients}, "samples": samples}


def test_points_take_each_configurations_median_run() -> None:
    pts = pr.points(_report())
    assert len(pts) == 40
    assert pts[3].time_s == _padded_time(list(pts[3].entries))
    assert [p.split for p in pts[:4]] == ["test", "train", "train", "train"]


def test_padded_backend_fits_the_padded_shape_and_not_eq19() -> None:
    fits = pr.refits(_report())
    assert fits["padded shape"].mape_pct < 1e-6
    assert fits["Eq. 19 (additive)"].mape_pct > 1.0
    errors = pr.category_errors(_report())
    assert {(e.category, e.split) for e in errors} >= {("mixed", "train"), ("compute", "test")}
    single = [e for e in errors if e.category == "compute"]
    assert all(e.count > 0 and e.mape_pct >= abs(e.bias_pct) for e in single)


def test_main_prints_the_table_and_both_fits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "gemma-report.json"
    path.write_text(json.dumps(_report()))
    assert main(["profile", "--residuals", str(path)]) == 0
    out = capsys.readouterr().out
    header = ["category", "split", "n", "MAPE", "%", "bias", "%", "mean", "s"]
    assert out.splitlines()[0].split() == header
    assert "Eq. 19 (additive): held-out R²" in out and "padded shape: held-out R² 1.000" in out
    assert "executed shape: held-out R²" in out


def _sample(config: int, split: str, time_s: float, run: int = 0) -> dict[str, Any]:
    return {
        "config": config, "category": "compute", "split": split, "run": run,
        "entries": [[1 + config, 0]], "time_s": time_s,
    }  # fmt: skip


def test_points_take_the_lower_median_of_an_even_number_of_runs() -> None:
    report = {
        "samples": [_sample(0, "train", t, run) for run, t in enumerate((0.4, 0.1, 0.3, 0.2))]
    }
    assert [p.time_s for p in pr.points(report)] == [0.2]


def test_category_errors_by_hand() -> None:
    # Eq. 19 with only c = 1 s predicts 1 s everywhere; relative errors (pred − meas) / meas:
    # +100 %, 0 %, −50 % on the training points; −75 % on the held-out one
    times = {0: ("train", 0.5), 1: ("train", 1.0), 2: ("train", 2.0), 3: ("test", 4.0)}
    report = {
        "wisp": {"coefficients": {"a_s": 0.0, "b_compute_s": 0.0, "b_read_s": 0.0, "c_s": 1.0}},
        "samples": [_sample(i, split, t) for i, (split, t) in times.items()],
    }
    train, test = pr.category_errors(report)
    assert (train.category, train.split, train.count) == ("compute", "train", 3)
    assert train.mape_pct == pytest.approx(50.0)
    assert train.bias_pct == pytest.approx(50.0 / 3)  # over-prediction is positive
    assert train.mean_time_s == pytest.approx(3.5 / 3)
    assert (test.split, test.count, test.mape_pct, test.bias_pct) == ("test", 1, 75.0, -75.0)


def test_refits_score_the_held_out_configurations_only() -> None:
    fits = pr.refits(_report())
    assert {m.num_samples for m in fits.values()} == {10}  # configurations 0, 4, ..., 36
    only_train = {"samples": [_sample(i, "train", 0.1 * (i + 1)) for i in range(5)]}
    only_test = {"samples": [_sample(i, "test", 0.1 * (i + 1)) for i in range(5)]}
    for report in (only_train, only_test):
        with pytest.raises(ValueError, match="needs training and held-out configurations"):
            pr.refits(report)


def test_executed_design_counts_the_passes_the_backend_runs() -> None:
    cold = pr.Point("compute", "train", ((300, 0),), 1.0)
    # a cold start beside a follow-up pads too much: two passes, each at its own shape
    mixed = pr.Point("mixed", "train", ((100, 0), (5, 200)), 1.0)
    # two follow-ups of one shape: one pass, both rows at the longest prefix
    two = pr.Point("memory", "train", ((5, 200), (5, 100)), 1.0)
    x = pr.executed_design([cold, mixed, two])
    assert x.tolist() == [
        [300, 300 * 300, 5, 1, 1],  # logits for min(4, 150) drafted + 1
        [100 + 5, 100 * 100 + 5 * 205, 5 + 5, 2, 1],
        [2 * 5, 2 * 5 * 205, 2 * 5, 1, 1],
    ]
    assert pr.EXECUTED_TERMS == ("row_s", "attention_s", "logit_row_s", "pass_s", "c_s")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"wisp": {\n', ":2: not valid JSON (Expecting property name enclosed in double quotes)"),
        ("[1, 2]", ": a JSON list, not a profile report"),
        ('{"format": "edgespec-profile-samples", "samples": []}',
         ": a samples file: timed runs, no fit; give the NAME-report.json that edgespec "
         "profile writes (its 'wisp' entry holds the Eq. 19 fit)"),
        # was: "not a report without the Eq. 19 fit ('wisp')"
        ('{"kind": "wc-dnn", "features": [], "mean": [], "scale": [], "layers": []}',
         ": a JSON object with keys 'kind', 'features', 'mean', 'scale' and 1 more, not a "
         "profile report; give the NAME-report.json that edgespec profile writes (its 'wisp' "
         "entry holds the Eq. 19 fit)"),
        ('{"' + "k" * 50 + '": 1}',
         ": a JSON object with keys '" + "k" * 40 + "', not a profile report; give the "
         "NAME-report.json that edgespec profile writes (its 'wisp' entry holds the Eq. 19 "
         "fit)"),
        ("{}",
         ": an empty JSON object, not a profile report; give the NAME-report.json that "
         "edgespec profile writes (its 'wisp' entry holds the Eq. 19 fit)"),
        ('{"wisp": {}}', ": 'wisp' has no 'coefficients' object"),
        ('{"wisp": {"coefficients": {"a_s": 1}}}',
         ": wisp.coefficients.b_compute_s is 'missing', not a number"),
    ],
)  # fmt: skip
def test_a_file_that_is_not_a_report_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, problem: str
) -> None:
    path = tmp_path / "r.json"
    path.write_text(text)
    assert main(["profile", "--residuals", str(path)]) == 2
    assert capsys.readouterr() == ("", f"edgespec profile: --residuals {path}{problem}\n")


def test_the_shipped_samples_file_and_a_folder_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from edgespec.profiling.samples import shipped_path

    assert main(["profile", "--residuals", str(shipped_path())]) == 2
    assert ": a samples file: timed runs, no fit; give the " in capsys.readouterr().err
    assert main(["profile", "--residuals", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == f"edgespec profile: --residuals {tmp_path}: a folder; give a profile's " + (
        "NAME-report.json\n"
    )


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"config": "3"}, "config is '3', not an integer"),
        ({"split": "dev"}, "split is 'dev', not 'train' or 'test'"),
        ({"entries": []}, "entries is [], not a non-empty list of the batch's [L_new >= 1, "
         "L_cached >= 0] pairs"),
        ({"entries": [[0, 5]]}, "entries is [[0, 5]], not a non-empty list of the batch's "
         "[L_new >= 1, L_cached >= 0] pairs"),
        ({"entries": None}, "no entries (the batch's [L_new >= 1, L_cached >= 0] pairs)"),
        ({"entries": [[0, 2]] * 40}, "entries is [[0, 2], [0, 2], [0, 2], [0, 2], [0, 2], [0, 2], "
         "[0, 2], ..., not a non-empty list of the batch's [L_new >= 1, L_cached >= 0] pairs"),
        ({"time_s": 0}, "time_s is 0, not a number > 0"),
        ({"time_s": None}, "time_s is None, not a number > 0"),
    ],
)  # fmt: skip
def test_a_bad_sample_is_named_by_its_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], problem: str
) -> None:
    report = _report()
    report["samples"][5] |= change
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    assert main(["profile", "--residuals", str(path)]) == 2
    assert capsys.readouterr() == (
        "",
        f"edgespec profile: --residuals {path}: samples[5]: {problem}\n",
    )


def test_a_report_without_held_out_configurations_prints_nothing_but_the_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _report()
    for s in report["samples"]:
        s["split"] = "train"
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    assert main(["profile", "--residuals", str(path)]) == 2
    assert capsys.readouterr() == (
        "",
        f"edgespec profile: --residuals {path}: the report needs training and held-out "
        "configurations\n",
    )


@pytest.mark.parametrize(
    ("data", "problem"),
    [  # each was a traceback (RecursionError, ValueError), or the decoder's reason alone
        (b"[" * 100_000, "not valid JSON (nested too deeply)"),
        (b'{"wisp": ' + b"1" * 5_000 + b"}", "not valid JSON (an integer of over 4,300 digits)"),
        (b'{"wisp": "\xff"}', "not UTF-8 text (byte 0xff at offset 10)"),  # invalid start byte
    ],
)
def test_a_file_that_is_no_json_says_so_with_the_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes, problem: str
) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(data)
    assert main(["profile", "--residuals", str(path)]) == 2
    assert capsys.readouterr() == ("", f"edgespec profile: --residuals {path}: {problem}\n")


def test_a_report_over_the_cap_is_refused_reading_one_byte_past_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file was read whole (``path.read_bytes()``), however large; this one is sparse."""
    assert report_file.MAX_REPORT_BYTES == 128 * 2**20
    path = tmp_path / "r.json"
    with path.open("wb") as fh:
        fh.truncate(report_file.MAX_REPORT_BYTES + 1)
    assert main(["profile", "--residuals", str(path)]) == 2
    assert capsys.readouterr() == (
        "",
        f"edgespec profile: --residuals {path}: larger than 128 MiB, the limit for a profile "
        "report\n",
    )


def test_a_report_at_the_cap_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cap is the file's size in bytes: one of exactly that many is a report."""
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_report()))
    monkeypatch.setattr(report_file, "MAX_REPORT_BYTES", path.stat().st_size)
    assert main(["profile", "--residuals", str(path)]) == 0
    monkeypatch.setattr(report_file, "MAX_REPORT_BYTES", path.stat().st_size - 1)
    assert main(["profile", "--residuals", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"edgespec profile: --residuals {path}: larger than {path.stat().st_size - 1:,} bytes, "
        "the limit for a profile report\n"
    )


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_a_device_is_refused_for_what_it_is(capsys: pytest.CaptureFixture[str]) -> None:
    """/dev/zero exists but is no regular file: it was refused as ``no such file``."""
    assert main(["profile", "--residuals", "/dev/zero"]) == 2
    assert capsys.readouterr().err == (
        "edgespec profile: --residuals /dev/zero: is not a regular file (a device, pipe or "
        "socket)\n"
    )
