"""`edgespec train stop-predictor` refuses traces it cannot learn from before any training,
in one line naming the ``--traces`` file(s): no first rejection (or no accepted position) in
a split, NaN or infinite features, no requests, lookup drafts; an ``--out`` or
``--report-dir`` that cannot be written is refused when the flags are parsed."""

from __future__ import annotations

import dataclasses
import errno
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgespec.cli import main
from edgespec.learn.stop.data import StopDataset, require_both_labels
from edgespec.learn.traces.records import TraceRecord, record_to_json, write_trace
from tests.learn.stop.test_study import synthetic_records

NEEDS_BOTH = (
    "the study needs accepted positions and first rejections in the training, validation "
    "and test requests)"
)
SMALL = ["--mlp-trials", "1", "--tree-trials", "1", "--latency-calls", "5"]


@pytest.fixture
def no_training(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any training started fails the test: the refusals must come first."""

    def never(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("training started")

    monkeypatch.setattr("edgespec.learn.stop.study.search_mlp", never)
    monkeypatch.setattr("edgespec.learn.stop.study.search_tree", never)


def _train(
    traces: list[Path], out: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str]:
    named = [arg for path in traces for arg in ("--traces", str(path))]
    code = main(["train", "stop-predictor", *named, "--out", str(out), *SMALL, *extra])
    return code, capsys.readouterr().err


@pytest.mark.usefixtures("no_training")
def test_traces_without_a_rejection_are_refused_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every position accepted: the tree baselines failed after the MLP search with an
    IndexError (``predict_proba(...)[:, 1]`` of a one-class model)."""
    every = [dataclasses.replace(r, acceptance_seq=(1,) * 40) for r in synthetic_records(30, 0)]
    traces, out = tmp_path / "all-accepted.jsonl", tmp_path / "stop.json"
    write_trace(traces, every)
    # 21 training requests of 40 tokens, each replayed in 8 rounds of 4 accepted positions
    assert _train([traces], out, capsys) == (
        2,
        "edgespec train stop-predictor: "
        f"--traces {traces}: no first rejection in the training requests: "
        f"all 672 positions they draft are accepted (21 requests; {NEEDS_BOTH}\n",
    )
    assert not out.exists()


def test_each_split_needs_both_outcomes() -> None:
    def part(labels: list[int], groups: list[int]) -> StopDataset:
        features = np.zeros((len(labels), 5))
        return StopDataset(features, np.array(labels), np.array(groups), ("a", "b", "c"))

    both = part([1, 0, 1], [0, 0, 1])
    require_both_labels((("training", both), ("validation", both), ("test", both)))
    with pytest.raises(ValueError) as caught:
        require_both_labels((("training", both), ("validation", part([0, 0], [2, 2]))))
    assert str(caught.value) == (
        "no accepted position in the validation requests: all 2 positions they draft are "
        f"first rejections (1 requests; {NEEDS_BOTH}"
    )
    with pytest.raises(ValueError, match="^no first rejection in the test requests: all 1 "):
        require_both_labels((("training", both), ("test", part([1], [2]))))


def _with_value(record: TraceRecord, row: int, column: int, value: float) -> dict[str, Any]:
    data = record_to_json(record)
    data["draft_features"][row][column] = value
    return data


@pytest.mark.usefixtures("no_training")
@pytest.mark.parametrize(("value", "shown"), [(float("nan"), "nan"), (float("-inf"), "-inf")])
def test_a_non_finite_feature_is_refused_naming_file_line_field_and_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: float, shown: str
) -> None:
    """A NaN failed late (``mean[0] is nan``) in a training request and gave NaN scores in
    silence in a test request; JSON's ``NaN`` / ``-Infinity`` are now refused on reading."""
    records = synthetic_records(30, 0)
    lines = [json.dumps(record_to_json(r)) for r in records]
    lines[3] = json.dumps(_with_value(records[3], 7, 1, value))
    traces = tmp_path / "bad.jsonl"
    traces.write_text("\n".join(lines) + "\n")
    assert _train([traces], tmp_path / "stop.json", capsys) == (
        2,
        "edgespec train stop-predictor: "
        f"--traces {traces}:4: draft_features: row 7: entropy_nats "
        f"is {shown}, expected a finite number (request s3)\n",
    )


@pytest.mark.usefixtures("no_training")
def test_no_requests_and_lookup_drafts_name_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty, good = tmp_path / "empty.jsonl", tmp_path / "good.jsonl"
    empty.write_text("")
    out = tmp_path / "stop.json"
    assert _train([empty], out, capsys) == (
        2,
        "edgespec train stop-predictor: "
        f"--traces {empty}: need at least 3 requests with drafted positions to split, got 0\n",
    )
    write_trace(good, synthetic_records(2, 0))
    assert _train([empty, good], out, capsys) == (
        2,
        "edgespec train stop-predictor: "
        f"--traces {empty} --traces {good}: need at least 3 requests with drafted "
        "positions to split, got 2\n",
    )
    lookup = tmp_path / "lookup.jsonl"
    drafted = [dataclasses.replace(r, draft_model="d+lookup") for r in synthetic_records(3, 0)]
    write_trace(lookup, drafted)
    assert _train([good, lookup], out, capsys) == (
        2,
        "edgespec train stop-predictor: "
        f"--traces {lookup}: trace request s0: draft 'd+lookup' drafts lookup "
        "tokens, which have no draft distribution; capture the dataset with the neural draft "
        "alone\n",
    )


@pytest.mark.usefixtures("no_training")
@pytest.mark.parametrize("flag", ["--out", "--report-dir"])
def test_an_output_that_cannot_be_written_is_refused_before_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, flag: str
) -> None:
    """``--out /proc/x.json`` ran the whole study, then failed naming its hidden temporary."""

    read_only = tmp_path / "read-only"
    read_only.mkdir()
    real = tempfile.TemporaryFile

    def refuse_there(*args: Any, **kwargs: Any) -> Any:
        if Path(kwargs["dir"]) == read_only:
            raise OSError(errno.EROFS, "Read-only file system")
        return real(*args, **kwargs)

    def never(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the traces were read")

    monkeypatch.setattr("edgespec.learn.stop.command.read_records", never)
    monkeypatch.setattr("edgespec.output_paths.tempfile.TemporaryFile", refuse_there)
    target = read_only / "new" / ("x.json" if flag == "--out" else "report")
    args = ["train", "stop-predictor", "--traces", "t.jsonl", flag, str(target)]
    if flag == "--report-dir":
        args += ["--out", str(tmp_path / "stop.json")]  # checked, and writable
    with pytest.raises(SystemExit) as stop:
        main(args)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (
        f"edgespec train stop-predictor: error: argument {flag}: {target}: cannot write in "
        f"{read_only}: Read-only file system"
    )
    assert list(tmp_path.iterdir()) == [read_only] and not any(read_only.iterdir())


@pytest.mark.parametrize("k_max", ["0", "-3"])
def test_a_k_max_below_one_is_refused_as_the_other_flags_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], k_max: str
) -> None:
    """Was ``--k-max must be >= 1, got 0`` after the traces were read, unlike argparse's
    ``argument --mlp-trials: must be >= 1, got 0``."""
    with pytest.raises(SystemExit) as stop:
        _train([tmp_path / "none.jsonl"], tmp_path / "p.json", capsys, "--k-max", k_max)
    assert stop.value.code == 2
    assert capsys.readouterr().err.endswith(
        f"edgespec train stop-predictor: error: argument --k-max: must be >= 1, got {k_max}\n"
    )
