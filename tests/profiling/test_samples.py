"""Shipped profile samples (edgespec.profiling.samples): written from a profile report,
read back with their provenance, the run-to-run spread, and clear errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.errors import UserInputError
from edgespec.profiling import samples as ps


def _report() -> dict[str, Any]:
    rows = []
    for config, (split, category, times) in enumerate(
        [
            ("train", "compute", (1.0, 1.2)),
            ("train", "memory", (0.5, 0.4)),
            ("train", "memory", (0.2, 0.2)),
            ("test", "mixed", (2.0, 3.0)),
        ]
    ):
        for run, t in enumerate(times):
            rows.append({
                "config": config, "category": category, "split": split, "run": run,
                "entries": [[3, 10 * config]], "time_s": t,
            })  # fmt: skip
    return {
        "command": "edgespec profile --target gemma3-270m --clock cpu",
        "target": "gemma3-270m",
        "hardware": "AMD EPYC",
        "load_average": [5.0, 4.0, 3.0],
        "wisp": {"coefficients": {}},
        "samples": rows,
    }


def test_run_spread_is_the_median_relative_range() -> None:
    # ranges / lower-median run: 0.2/1.0, 0.1/0.4, 0/0.2, 1.0/2.0 -> median of 0.2, 0.25, 0, 0.5
    assert ps.run_spread_pct(_report()["samples"]) == pytest.approx(22.5)
    assert ps.run_spread_pct([{"config": 0, "time_s": 1.0}]) == 0.0


def test_a_report_becomes_a_samples_file_and_reads_back(tmp_path: Path) -> None:
    doc = ps.samples_document(_report(), "AMD EPYC, 2 cores", "2026-11-29")
    assert "load_average" not in doc and "wisp" not in doc
    assert doc["grid"] == (
        "train 3 (1 compute, 2 memory); test 1 (1 mixed); 2 timed runs per configuration"
    )
    out = tmp_path / "s.json"
    ps.write_document(doc, out)
    assert len(out.read_text().splitlines()) == 2 + 8  # head, 8 samples, the close
    back = ps.load_samples(out)
    assert (back.command, back.machine, back.measured_on) == (
        "edgespec profile --target gemma3-270m --clock cpu", "AMD EPYC, 2 cores", "2026-11-29"
    )  # fmt: skip
    assert back.source == str(out) and back.num_runs == 2
    assert [(p.split, p.time_s) for p in back.points] == [
        ("train", 1.0), ("train", 0.4), ("train", 0.2), ("test", 2.0)
    ]  # fmt: skip


def test_a_profile_report_reads_directly_with_what_it_records() -> None:
    back = ps.from_document(_report(), "r.json")
    assert back.machine == "AMD EPYC" and back.measured_on == "not recorded"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({}, "x.json: no 'samples' list (not a profile report or samples file)"),
        (
            {"samples": [{"config": 0, "category": "c", "split": "train", "run": 0,
                          "entries": [[1, 0]], "time_s": 1.0}]},
            "x.json: needs 'train' and 'test' configurations, has {'train'}",
        ),
    ],
)  # fmt: skip
def test_bad_documents_are_refused_naming_the_file(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(UserInputError) as info:
        ps.from_document(doc, "x.json")
    assert str(info.value) == message


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="no-such.json: no such samples file"):
        ps.load_samples(tmp_path / "no-such.json")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"samples": "\xe9"}', "{path}: not UTF-8 text (byte 0xe9 at offset 13)"),  # a traceback
        (b'{"samples":\n[1,', "{path}:2: not JSON (Expecting value)"),
        (b"[1, 2]", "{path}: not a JSON object (a profile report or samples file)"),
    ],
)
def test_wisp_estimator_refuses_an_unreadable_samples_file_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes, message: str
) -> None:
    path = tmp_path / "s.json"
    path.write_bytes(data)
    assert main(["reproduce", "wisp-estimator", "--samples", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"edgespec reproduce wisp-estimator: {message.format(path=path)}\n"
    )
