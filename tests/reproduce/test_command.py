"""``edgespec reproduce`` (edgespec.reproduce.command): argument errors, and a folder that
holds an earlier reproduction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.errors import UserInputError
from edgespec.reproduce.command import run_folder
from edgespec.reproduce.folder import SCENARIO_MARK


def test_unknown_paper_names_the_argument_and_the_choices(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["reproduce", "nosuchpaper"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.endswith(
        "edgespec reproduce: error: argument PAPER: invalid choice: 'nosuchpaper' "
        "(choose from 'wisp', 'dsd', 'zhu', 'wisv', 'wisp-serving', 'wisp-estimator', "
        "'dsd-real-pair', 'wisv-real-pair', 'wisv-heldout')\n"
    )


def _write_run(folder: Path, names: list[str]) -> None:
    """An earlier run's files: its scenarios carry the mark a reproduction writes."""
    for name in names:
        (folder / name).write_text(SCENARIO_MARK * name.endswith(".yaml") + "earlier")


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_an_out_holding_an_earlier_reproduction_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, a second run wrote beside the first: a quick run's scenarios and plots mixed
    with a full run's. And --overwrite removed every file any paper might write (fig*.png,
    profiles/*.yaml): the user's own, in a folder that records no run that wrote them."""
    for name in ("scenarios", "profiles"):
        (tmp_path / name).mkdir()
    for name in ("REPORT.md", "results.json", "scenarios/w1.yaml", "fig1.png",
                 "profiles/my-gpu.yaml", "notes.txt"):  # fmt: skip
        (tmp_path / name).write_text("earlier")
    assert main(["reproduce", "zhu", "--quick", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"edgespec reproduce zhu: --out {tmp_path} already holds a run (REPORT.md, results.json); "
        "give another folder, or --overwrite to replace that run's files\n"
    )
    assert run_folder("zhu", tmp_path, overwrite=True) == tmp_path
    assert capsys.readouterr().err == (
        "--overwrite: removed REPORT.md, results.json; kept fig1.png, notes.txt, "
        f"profiles/my-gpu.yaml, scenarios/w1.yaml (no run recorded in {tmp_path} wrote them)\n"
    )
    assert _files(tmp_path) == [
        "fig1.png",
        "notes.txt",
        "profiles/my-gpu.yaml",
        "scenarios/w1.yaml",
    ]


WISP_RUN = ["fig7_violation_curves.png", "predictor.json", "profiles/edge-table6.yaml",
            "results.json", "scenarios/w1.yaml"]  # fmt: skip


@pytest.mark.parametrize("record", ["results.json", "REPORT.md"])
def test_overwrite_removes_another_papers_files_only_where_the_folder_records_its_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], record: str
) -> None:
    """A WISP run's folder (its results.json names it; or, written before that, its
    REPORT.md's command line does) taken over by Zhu: WISP's files go, with the scenarios/
    folder they leave empty; a DSD plot (no DSD run recorded) and the user's profile stay."""
    for name in ("scenarios", "profiles"):
        (tmp_path / name).mkdir()
    _write_run(tmp_path, WISP_RUN)
    for name in ("physical-fig5_stacks.png", "profiles/my-gpu.yaml"):
        (tmp_path / name).write_text("earlier")
    recorded = {"reproduction": "wisp"} if record == "results.json" else {}
    (tmp_path / "results.json").write_text(json.dumps({**recorded, "setup": {}}))
    if record == "REPORT.md":
        (tmp_path / "REPORT.md").write_text(
            "# WISP (seed 000) reproduced\n\nCommand: `edgespec reproduce wisp --out x`\n"
        )
    run = sorted({*WISP_RUN, record})
    with pytest.raises(UserInputError) as refused:
        run_folder("zhu", tmp_path, overwrite=False)
    assert str(refused.value) == (
        f"--out {tmp_path} already holds a run ({', '.join(run)}); give another folder, or "
        "--overwrite to replace that run's files"
    )
    assert run_folder("zhu", tmp_path, overwrite=True) == tmp_path
    assert capsys.readouterr().err == (
        f"--overwrite: removed {', '.join(run)}; kept physical-fig5_stacks.png, "
        f"profiles/my-gpu.yaml (no run recorded in {tmp_path} wrote them)\n"
    )
    assert _files(tmp_path) == ["physical-fig5_stacks.png", "profiles/my-gpu.yaml"]
    assert not (tmp_path / "scenarios").exists()  # left empty: removed


def test_overwrite_removes_the_folders_it_empties(tmp_path: Path) -> None:
    """--overwrite left empty scenarios/ and profiles/ folders behind."""
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "profiles").mkdir()
    _write_run(tmp_path, WISP_RUN)
    assert run_folder("wisp", tmp_path, overwrite=True) == tmp_path
    assert list(tmp_path.iterdir()) == []


def test_the_users_own_scenarios_are_neither_refused_nor_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """scenarios/*.yaml matched the user's own scenario in a run's scenarios/ folder: a
    folder holding only it was refused as a run, and --overwrite removed it with the run's
    (hidden in "and 85 more"). A scenario is the run's when it carries the run's mark."""
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios/my-own.yaml").write_text("duration_s: 5\n")
    assert run_folder("wisv", tmp_path, overwrite=False) == tmp_path
    _write_run(tmp_path, ["REPORT.md", "results.json", "scenarios/v1-g4.yaml"])
    with pytest.raises(UserInputError, match=r"already holds a run \(REPORT.md, results.json, "
                       r"scenarios/v1-g4.yaml\)"):  # fmt: skip
        run_folder("wisv", tmp_path, overwrite=False)
    assert run_folder("wisv", tmp_path, overwrite=True) == tmp_path
    assert capsys.readouterr().err == (
        "--overwrite: removed REPORT.md, results.json, scenarios/v1-g4.yaml; kept "
        f"scenarios/my-own.yaml (no run recorded in {tmp_path} wrote them)\n"
    )
    assert _files(tmp_path) == ["scenarios/my-own.yaml"]


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_a_folder_where_the_run_writes_a_file_is_refused_before_anything_runs(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    overwrite: list[str],
) -> None:
    """Before, DSD ran every run, then died naming its temporary file
    (``.physical-fig5_stacks.png.16016.tmp: Is a directory``) and kept no results."""
    import edgespec.reproduce.dsd.report as dsd_report

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the run started")

    monkeypatch.setattr(dsd_report, "reproduce", never)
    (tmp_path / "physical-fig5_stacks.png").mkdir()
    assert main(["reproduce", "dsd", "--quick", "--out", str(tmp_path), *overwrite]) == 2
    assert capsys.readouterr().err == (
        f"edgespec reproduce dsd: --out {tmp_path}: {tmp_path / 'physical-fig5_stacks.png'} is a "
        "folder where this run writes a file; move it or give another folder\n"
    )
    assert [p.name for p in tmp_path.iterdir()] == ["physical-fig5_stacks.png"]
    (tmp_path / "physical-fig5_stacks.png").rmdir()
    (tmp_path / "scenarios").write_text("mine")
    assert main(["reproduce", "dsd", "--quick", "--out", str(tmp_path), *overwrite]) == 2
    assert capsys.readouterr().err == (
        f"edgespec reproduce dsd: --out {tmp_path}: {tmp_path / 'scenarios'} is a file where this "
        "run makes a folder; move it or give another folder\n"
    )


def test_every_claims_reproduction_declares_its_files() -> None:
    from edgespec.reproduce.command import PAPERS, Reproduction

    assert {n: r.files[:2] for n, r in PAPERS.items() if r.claims} == {
        n: ("REPORT.md", "results.json") for n in ("wisp", "dsd", "zhu", "wisv", "wisv-real-pair")
    }
    assert all(not r.files for r in PAPERS.values() if r.command)
    with pytest.raises(ValueError, match="^a claims reproduction, and only one, declares"):
        Reproduction("x", claims="m")


def test_a_reproduction_without_out_makes_its_new_folder_and_a_failed_one_removes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default runs/reproduce-<paper>-<time> was claimed without being made: two
    reproductions started in one second were given the same folder, and a failed one left
    its folder to the other (the simulator's race, fixed there first)."""
    import time

    import edgespec.reproduce.dsd.report as dsd_report

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(time, "strftime", lambda *args: "20261206-020000")
    claimed: list[Path] = []

    def fails(out: Path, **kwargs: object) -> None:
        assert out.is_dir()  # made when claimed
        claimed.extend([out, run_folder("dsd", None, False)])  # another, in the same second
        raise UserInputError("the run failed")

    monkeypatch.setattr(dsd_report, "reproduce", fails)
    assert main(["reproduce", "dsd", "--quick"]) == 2
    assert capsys.readouterr().err == "edgespec reproduce dsd: the run failed\n"
    default = Path("runs/reproduce-dsd-20261206-020000")
    assert claimed == [default, default.with_name(f"{default.name}-2")]
    assert [p.name for p in Path("runs").iterdir()] == [f"{default.name}-2"]  # the other's
