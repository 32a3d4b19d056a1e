"""``edgespec profile --out``: its files are named by one function for writer and readers
(a ``.yml`` profile's draft is ``-draft.yml``), and an ``--out`` that already holds a
profile is refused before anything loads unless ``--overwrite``, which leaves no sibling
of another run beside this one's."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from edgespec.calibration.checks import GivenProfile, check_profiles
from edgespec.cli import main
from edgespec.profiling.fit import WISP_TERMS, FitMetrics, LinearFit
from edgespec.profiling.run import ProfileResult, write_profiles
from edgespec.runtime.testing import tiny_llama


def _profile(model: Path, out: Path, *flags: str) -> int:
    """A real ``edgespec profile`` of a tiny model on a tiny grid (a few seconds)."""
    argv = ["--target", str(model), "--quick", "--scale", "0.05", "--threads", "1", "--runs"]
    argv += ["1", "--warmup", "0", "--bootstrap", "10", "--out", str(out)]
    return main(["profile", *argv, *flags])


def _contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_yml_profile_pairs_with_its_own_draft_and_no_other_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was: the draft written as p-draft.yml, calibrate looking for p-draft.yaml; and a
    second run without --draft replaced p.yml and the report but kept the first run's
    p-draft.yml beside them."""
    model = tmp_path / "tiny"
    tiny_llama(0, num_layers=1).save_pretrained(str(model))
    out = tmp_path / "run" / "p.yml"
    assert _profile(model, out, "--draft", str(model), "--gamma", "2") == 0
    assert sorted(_contents(out.parent)) == ["p-draft.yml", "p-report.json", "p.yml"]
    draft = out.parent / "p-draft.yml"
    args = argparse.Namespace(profile=str(out), target=str(model), draft=str(model))
    assert check_profiles(args) == GivenProfile(out, draft, str(model), str(model))

    capsys.readouterr()
    before = _contents(out.parent)
    assert _profile(model, out) == 2  # the same --out, no --draft: refused, nothing measured
    assert capsys.readouterr() == (
        "",
        f"edgespec profile: --out {out} already holds a profile (p.yml, p-draft.yml, "
        "p-report.json); give another --out, or --overwrite to replace that profile's files\n",
    )
    assert _contents(out.parent) == before

    assert _profile(model, out, "--overwrite") == 0
    assert sorted(_contents(out.parent)) == ["p-report.json", "p.yml"]
    assert json.loads((out.parent / "p-report.json").read_text())["draft"] is None


@pytest.mark.parametrize(
    "names",
    [["p.yaml"], ["p-draft.yaml"], ["p-report.json", "p-zhu.yaml"], ["p-draft-zhu.yaml"]],
)
def test_an_out_holding_a_profile_is_refused_before_the_target_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], names: list[str]
) -> None:
    """Was: measured, then wrote over them (and kept the siblings it did not write)."""
    for name in names:
        (tmp_path / name).write_text("earlier")
    target = str(tmp_path / "never-loaded")  # loading it would fail differently
    out = tmp_path / "p.yaml"
    assert main(["profile", "--target", target, "--out", str(out)]) == 2
    order = ["p.yaml", "p-zhu.yaml", "p-draft.yaml", "p-draft-zhu.yaml", "p-report.json"]
    shown = ", ".join(name for name in order if name in names)
    assert capsys.readouterr() == (
        "",
        f"edgespec profile: --out {out} already holds a profile ({shown}); give another "
        "--out, or --overwrite to replace that profile's files\n",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)  # no checkpoint


def _fit(values: tuple[float, ...]) -> LinearFit:
    metrics = FitMetrics(r2=1.0, mae_s=0.0, mape_pct=0.0, num_samples=3)
    bounds = tuple((v, v) for v in values)
    return LinearFit(WISP_TERMS, values, bounds, metrics, metrics, ((1.0, 1.0),) * 3)


def test_writing_a_profile_removes_the_siblings_it_does_not_write(tmp_path: Path) -> None:
    """Was: an earlier run's -zhu, -draft and -draft-zhu files stayed beside the new
    target profile (a model directory target, no draft: only NAME.yaml and the report)."""
    for name in ("p-zhu.yml", "p-draft.yml", "p-draft-zhu.yml", "other.yml", "p-draft.yaml"):
        (tmp_path / name).write_text("earlier")
    fit = _fit((1e-4, 1e-8, 1e-6, 0.01))
    result = ProfileResult("path/to/model", (), (), 0, fit, fit, None, "cpu", (0.0, 0.0, 0.0))
    paths = write_profiles(result, tmp_path / "p.yml", "cmd")
    assert [p.name for p in paths] == ["p.yml", "p-report.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "other.yml", "p-draft.yaml", "p-report.json", "p.yml"
    ]  # fmt: skip


def test_a_local_targets_profile_is_found_again_from_another_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Was: ``model: tiny`` as typed, so ``calibrate --profile`` from any other folder
    refused the profile of its own target ("records model tiny (no such model from here)")."""
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    elsewhere.mkdir()
    tiny_llama(0, num_layers=1).save_pretrained(str(work / "tiny"))
    monkeypatch.chdir(work)
    assert _profile(Path("tiny"), Path("p.yaml"), "--draft", "tiny", "--gamma", "2") == 0
    for name in ("p.yaml", "p-draft.yaml"):
        assert f"model: {work / 'tiny'}\n" in (work / name).read_text()
    monkeypatch.chdir(elsewhere)
    given = argparse.Namespace(
        profile="../work/p.yaml", target="../work/tiny", draft="../work/tiny"
    )
    found = check_profiles(given)
    assert found is not None and found.target_model == found.draft_model == str(work / "tiny")
