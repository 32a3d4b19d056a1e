"""What ``edgespec sim`` leaves behind and prints (edgespec.sim.commands.run): the
run folder's files, its default name, scenario.yaml's key order, the one-line summaries
of a plain run, a sweep, a capacity search and a sharded run; a folder holding an earlier
run is refused, or emptied of that run's files with --overwrite (edgespec.sim.run_folder)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgespec.cli import main
from edgespec.errors import UserInputError
from edgespec.sim.run_folder import RUN_FILES, claim_run_folder, made_run_folder
from tests.sim.helpers import tiny_scenario
from tests.sim.test_shards import pinned

QUIET = ["--quiet", "--no-plots"]
PLOTS = {"latency_cdf.png", "slo_attainment.png", "utilization.png", "batch_sizes.png"}


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rich wraps at the terminal width; a wide one keeps each summary on one line."""
    monkeypatch.setenv("COLUMNS", "500")


def write(tmp_path: Path, data: dict[str, Any], name: str = "tiny.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def printed(capsys: pytest.CaptureFixture[str]) -> str:
    return " ".join(capsys.readouterr().out.split())


def test_plain_run_with_plots_writes_every_plot_and_the_attribution_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, tiny_scenario(duration_s=3.0))
    out = tmp_path / "run"
    assert main(["sim", str(path), "--rounds", "--quiet", "--out", str(out)]) == 0
    pngs = {p.name for p in out.glob("*.png")}
    assert pngs == {*PLOTS, "attribution.png"}
    assert (out / "attribution.json").is_file()
    metrics = json.loads((out / "metrics.json").read_text())
    assert re.search(
        rf"tiny: \d+ rounds, {metrics['num_requests']} requests, 3 s simulated "
        rf"in \d+\.\d\d s wall → {re.escape(str(out))}$",
        printed(capsys),
    )


def test_no_plots_with_rounds_writes_the_attribution_without_its_plot(tmp_path: Path) -> None:
    path = write(tmp_path, tiny_scenario(duration_s=3.0))
    out = tmp_path / "run"
    assert main(["sim", str(path), "--rounds", *QUIET, "--out", str(out)]) == 0
    assert list(out.glob("*.png")) == []
    assert (out / "attribution.json").is_file()
    assert (out / "rounds.csv").read_text().count("\n") > 1


def test_scenario_yaml_keeps_the_scenario_key_order_and_the_overrides(tmp_path: Path) -> None:
    data = tiny_scenario(duration_s=2.0)
    path = write(tmp_path, data)
    out = tmp_path / "run"
    assert main(["sim", str(path), "duration_s=1.5", "seed=11", *QUIET, "--out", str(out)]) == 0
    written = yaml.safe_load((out / "scenario.yaml").read_text())
    assert list(written) == list(data)
    assert written == {**data, "seed": 11, "duration_s": 1.5}  # a key given twice: refused
    assert not (out / "rounds.csv").exists()  # only with --rounds


def test_the_default_run_folder_is_runs_name_and_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, tiny_scenario(duration_s=2.0))
    monkeypatch.chdir(tmp_path)
    assert main(["sim", str(path), *QUIET]) == 0
    folders = [p.name for p in (tmp_path / "runs").iterdir()]
    assert len(folders) == 1 and re.fullmatch(r"tiny-\d{8}-\d{6}", folders[0])
    assert (tmp_path / "runs" / folders[0] / "metrics.json").is_file()


def test_a_scenario_file_needs_no_yaml_suffix_and_a_missing_yml_is_not_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, tiny_scenario(duration_s=2.0), name="tiny.scenario")
    assert main(["sim", str(path), *QUIET, "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    assert main(["sim", "missing.yml", *QUIET]) == 2
    assert capsys.readouterr().err == "edgespec sim: missing.yml: file not found\n"


def test_a_sweep_says_how_many_runs_and_where_they_went(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, tiny_scenario(duration_s=2.0))
    out = tmp_path / "s"
    assert main(["sim", str(path), "--sweep", "seed=1,2,3", *QUIET, "--out", str(out)]) == 0
    assert printed(capsys).endswith(f"sweep: 3 runs → {out / 'sweep.json'}, {out / 'sweep.csv'}")
    assert (out / "sweep.csv").read_text().count("\n") == 4


def test_capacity_json_is_indented_and_probes_are_listed_by_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, tiny_scenario(duration_s=5.0))
    out = tmp_path / ("a-long-folder-name-" * 3) / "cap"
    key = "auto_topology.devices.0.count"
    args = ["sim", str(path), "--capacity", key, "--lo", "3", "--hi", "5", "--epsilon", "1"]
    assert main([*args, *QUIET, "--out", str(out)]) == 0
    text = (out / "capacity.json").read_text()
    assert text == json.dumps(json.loads(text), indent=2) + "\n"
    lines = capsys.readouterr().out.splitlines()
    rows = [int(m.group(1)) for line in lines if (m := re.match(r"^\W*(\d+)\s+│", line))]
    assert rows == [3, 5, 3, 5]  # the probes table, then the per-class table
    # one line, not wrapped at 80 columns before the file
    assert lines[-1] == (
        f"capacity {key} at epsilon=1.0: 5 (at upper bound) → {out / 'capacity.json'}"
    )


def test_a_capacity_whose_lower_bound_violates_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tiny_scenario(duration_s=20.0)
    data["slo_classes"] = {"tight": 1e6}
    data["auto_topology"]["devices"][0]["slo_mix"] = {"tight": 1}
    path = write(tmp_path, data)
    out = tmp_path / "cap"
    key = "auto_topology.devices.0.count"
    args = ["sim", str(path), "--capacity", key, "--lo", "2", "--hi", "6", "--epsilon", "0"]
    assert main([*args, *QUIET, "--out", str(out)]) == 0
    assert json.loads((out / "capacity.json").read_text())["capacity"] is None
    assert printed(capsys).endswith(
        f"capacity {key} at epsilon=0.0: None (even {key}=2 violates more than epsilon)"
        f" → {out / 'capacity.json'}"
    )


@pytest.mark.parametrize(("workers", "said_workers"), [(1, "1 worker"), (3, "2 workers")])
def test_a_sharded_run_writes_shards_json_and_names_engine_and_workers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], workers: int, said_workers: str
) -> None:
    """The workers said are those started: no more than the shards (it said 3 of 2)."""
    path = write(tmp_path, pinned(), name="pinned.yaml")
    out = tmp_path / "run"
    args = ["sim", str(path), "duration_s=3", "--shards", "2", "--workers", str(workers)]
    assert main([*args, *QUIET, "--out", str(out)]) == 0
    shards = json.loads((out / "shards.json").read_text())
    assert [sorted(s) for s in shards] == [["cells", "num_rounds", "wall_s"]] * 2
    assert all(s["wall_s"] == round(s["wall_s"], 3) for s in shards)
    rounds = sum(s["num_rounds"] for s in shards)
    metrics = json.loads((out / "metrics.json").read_text())
    said = printed(capsys)
    assert "so it ran as" not in said
    assert re.search(
        rf"tiny: {rounds} rounds in 2 shards \(local, {said_workers}\), "
        rf"{metrics['num_requests']} requests, 3 s simulated in \d+\.\d\d s wall",
        said,
    )


def test_a_second_run_into_the_same_out_is_refused_and_the_first_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, tiny_scenario(duration_s=2.0))
    out = tmp_path / "run"
    assert main(["sim", str(path), "--rounds", "--quiet", "--out", str(out)]) == 0
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    capsys.readouterr()
    assert main(["sim", str(path), "seed=3", *QUIET, "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"edgespec sim: --out {out} already holds a run (attribution.json, attribution.png, "
        "batch_sizes.png, batches.parquet, latency_cdf.png, metrics.json, requests.csv, "
        "requests.parquet and 5 more); give another folder, or --overwrite to replace "
        "that run's files\n"
    )
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first


def test_overwrite_leaves_only_the_new_runs_files_and_what_was_not_a_runs(tmp_path: Path) -> None:
    path = write(tmp_path, tiny_scenario(duration_s=2.0))
    out = tmp_path / "run"
    assert main(["sim", str(path), "--rounds", "--quiet", "--out", str(out)]) == 0
    (out / "notes.txt").write_text("mine")
    assert main(["sim", str(path), "seed=3", *QUIET, "--overwrite", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["notes.txt", "metrics.json", "scenario.yaml", "requests.csv", "requests.parquet",
         "batches.parquet"]
    )  # fmt: skip
    assert yaml.safe_load((out / "scenario.yaml").read_text())["seed"] == 3
    assert (out / "notes.txt").read_text() == "mine"


def test_a_folder_without_a_runs_files_is_used_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    assert claim_run_folder(tmp_path, "tiny", False, "20261129-230000") == tmp_path
    assert claim_run_folder(tmp_path / "new", "tiny", False, "20261129-230000") == tmp_path / "new"
    assert not (tmp_path / "new").exists()  # nothing is made before the run writes
    (tmp_path / "sweep.json").write_text("{}")
    with pytest.raises(UserInputError, match=r"already holds a run \(sweep\.json\)"):
        claim_run_folder(tmp_path, "tiny", False, "20261129-230000")
    assert set(RUN_FILES) >= {"pipeline.json", "capacity.json", "shards.json", "sweep.csv"}


def test_a_taken_default_folder_gets_the_next_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    stamp = "20261129-230000"
    Path("runs/tiny-20261129-230000-2").mkdir(parents=True)  # an earlier run's
    assert claim_run_folder(None, "tiny", False, stamp) == Path("runs/tiny-20261129-230000")
    assert claim_run_folder(None, "tiny", False, stamp) == Path("runs/tiny-20261129-230000-3")
    assert sorted(p.name for p in Path("runs").iterdir()) == [
        "tiny-20261129-230000", "tiny-20261129-230000-2", "tiny-20261129-230000-3"
    ]  # fmt: skip


def test_two_runs_started_in_one_second_never_share_the_default_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes claiming runs/<name>-<time> in the same second (tests on two
    workers): the folder is made when claimed, so the second gets -2. Both were given the
    same folder, and the one that failed removed it, still empty, under the other, whose
    record file then could not be written (ENOENT on runs/tiny-<time>/.requests.csv.tmp)."""
    monkeypatch.chdir(tmp_path)
    failing = claim_run_folder(None, "tiny", False, "20261129-230000")
    running = claim_run_folder(None, "tiny", False, "20261129-230000")
    assert (failing, running) == (
        Path("runs/tiny-20261129-230000"), Path("runs/tiny-20261129-230000-2")
    )  # fmt: skip
    with made_run_folder(running, claimed=True):
        with pytest.raises(UserInputError), made_run_folder(failing, claimed=True):
            raise UserInputError("unknown batching policy")
        (running / "requests.csv").write_text("id\n")
    assert sorted(p.name for p in Path("runs").iterdir()) == ["tiny-20261129-230000-2"]
    with pytest.raises(UserInputError), made_run_folder(running, claimed=True):
        (running / "requests.csv").unlink()
        raise UserInputError("the run failed")
    assert not Path("runs").exists()  # a failed run leaves no folder its claim made


def test_a_run_that_fails_at_set_up_leaves_no_run_behind_and_the_folder_free(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A trace not found is found when the run is built, after its record files opened:
    their empty files made the next run into the same --out 'already holds a run'."""
    path = write(tmp_path, tiny_scenario(duration_s=2.0))
    out = tmp_path / "run"
    assert main(["sim", str(path), "workload={kind: trace, trace: nosuch}", *QUIET,
                 "--out", str(out)]) == 2  # fmt: skip
    assert capsys.readouterr().err == (
        "edgespec sim: config field 'workload.trace': nosuch: no such trace file or bundled "
        "trace; bundled: ['cnndm', 'gsm8k', 'humaneval', 'sharegpt']\n"
    )
    assert not out.exists()
    assert main(["sim", str(path), *QUIET, "--out", str(out)]) == 0


def test_the_last_line_names_the_run_folder_whole_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not on a terminal, the line wrapped at 80 columns before the folder, and a folder
    with brackets lost them to rich's markup."""
    path = write(tmp_path, tiny_scenario(duration_s=3.0))
    out = tmp_path / ("a-long-folder-name-" * 4) / "[run]"
    assert main(["sim", str(path), "--quiet", "--out", str(out)]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert re.fullmatch(rf"tiny: .* s wall → {re.escape(str(out))}", last), last


@pytest.mark.parametrize("text", ["", "# only a comment\n"])
def test_an_empty_scenario_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    """It ran the built-in defaults, one device for 60 s, and said nothing of it."""
    path = tmp_path / "empty.yaml"
    path.write_text(text)
    assert main(["sim", str(path), "--quiet", "--out", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err == (
        f"edgespec sim: {path}: holds no scenario (empty, or comments only)\n"
    )
    assert not (tmp_path / "run").exists()


def test_a_run_without_out_that_fails_leaves_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "tiny.yaml"
    file.write_text(yaml.safe_dump(tiny_scenario(duration_s=1.0)))
    monkeypatch.chdir(tmp_path)
    assert main(["sim", str(file), "policies.batching.name=nope", *QUIET]) == 2
    assert "unknown batching policy 'nope'" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()  # the folder its claim made is gone again
