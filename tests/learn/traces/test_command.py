"""`edgespec trace` end to end on tiny local models (HF directories saved in the test)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.learn.traces.records import read_trace
from tests.models.tiny import VOCAB, tiny_draft, tiny_target
from tests.word_tokenizer import make_word_tokenizer, word_vocab


def tiny_tokenizer() -> Any:
    """The tiny target's tokenizer: words w0..w{VOCAB-1}, tiny.SPECIAL's ids named."""
    words = word_vocab(VOCAB, {0: "<pad>", 1: "<eos>", 2: "<bos>"})
    return make_word_tokenizer(
        words, unk_token="w3", unk_special=False, fuse=False,
        bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
    )  # fmt: skip


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("pair")
    target = tiny_target()
    target.save_pretrained(root / "target")
    tiny_tokenizer().save_pretrained(root / "target")
    tiny_draft(list(range(0, VOCAB, 2))).save(root / "draft")
    return root / "target", root / "draft"


def test_trace_command_writes_a_trace_and_a_summary(
    pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompts = tmp_path / "toy.jsonl"
    prompts.write_text(
        "".join(json.dumps({"prompt": f"w5 w{9 + i} w7 w5"}) + "\n" for i in range(3))
    )
    target, draft = pair
    args = ["trace", "--target", str(target), "--draft", str(draft), "--dataset", str(prompts)]
    args += ["--limit", "2", "--max-new-tokens", "8", "--baselines", "--threads", "1"]
    assert main([*args, "--out", str(tmp_path / "t.jsonl"), "--out-dir", str(tmp_path / "d")]) == 0
    records = read_trace(tmp_path / "t.jsonl")
    assert [r.request_id for r in records] == ["toy-0", "toy-1"]
    assert all(r.lossless and r.output_tokens == 8 and r.draft_features for r in records)
    assert read_trace(tmp_path / "d" / "toy.jsonl") == records
    err = capsys.readouterr().err
    assert "speculative decoding, greedy, γ = 4" in err and "wrote 2 records" in err


def test_trace_command_needs_an_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "--draft", "ngram"]) == 2
    assert "edgespec trace: give --out FILE and/or --out-dir DIR" in capsys.readouterr().err


def test_unknown_dataset_lists_the_bundled_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["trace", "--target", "never-loaded", "--draft", "ngram", "--dataset", "gsm9k"]
    assert main([*args, "--out", str(tmp_path / "x.jsonl")]) == 2
    assert capsys.readouterr().err == (
        "edgespec trace: --dataset gsm9k: neither a bundled dataset "
        "(gsm8k, cnndm, humaneval, sharegpt, general) nor a JSONL prompt file\n"
    )


def test_the_held_out_set_has_no_train_split_to_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was a ValueError traceback, before any model loaded."""
    args = ["trace", "--target", "never-loaded", "--draft", "ngram", "--dataset", "general"]
    assert main([*args, "--split", "train", "--out", str(tmp_path / "x.jsonl")]) == 2
    assert capsys.readouterr().err == (
        "edgespec trace: --dataset general --split train: 'general' is held out from "
        "training: it has a test split only\n"
    )


def test_trace_command_rejects_bad_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["trace", "--gamma", "0", "--out", str(tmp_path / "x.jsonl")]) == 2
    assert "--gamma must be >= 1, got 0" in capsys.readouterr().err


def test_trace_command_with_a_token_tree(
    pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompts = tmp_path / "toy.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": f"w5 w{9 + i} w7 w5"}) + "\n" for i in (0, 1)))
    target, draft = pair
    args = ["trace", "--target", str(target), "--draft", str(draft), "--dataset", str(prompts)]
    args += ["--max-new-tokens", "8", "--baselines", "--threads", "1", "--tree", "2,2,1"]
    assert main([*args, "--lookup", "--out", str(tmp_path / "t.jsonl")]) == 0
    records = read_trace(tmp_path / "t.jsonl")
    assert all(r.lossless and r.output_tokens == 8 for r in records)
    assert records[0].draft_model.endswith("+tree(2,2,1)+lookup")
    assert any(rnd.gamma > 4 for r in records for rnd in r.rounds)  # tree nodes were sent
    for r in records:  # the acceptance sequence replays the rounds actually run
        flags = [f for rnd in r.rounds for f in [1] * rnd.num_accepted + [0]][: r.output_tokens]
        assert list(r.acceptance_seq) == flags
    assert {r.draft_tree for r in records} == {"2,2,1"}
    # simulated as the workload, the tree trace runs its captured rounds
    from edgespec.sim.setup.scenario import scenario_from_dict
    from edgespec.sim.simulator import simulate

    data = {
        "duration_s": 600.0,
        "auto_topology": {"devices": [{"count": 2}], "servers": [{"count": 1}]},
        "acceptance": {"kind": "trace"},
        "workload": {"kind": "trace", "trace": str(tmp_path / "t.jsonl")},
        "record_rounds": True,
    }
    sim = simulate(scenario_from_dict(data))
    for r in records:
        replayed = [
            (x.num_drafted, x.num_accepted) for x in sim.rounds if x.request_id == r.request_id
        ]
        assert replayed == [(rnd.gamma, rnd.num_accepted) for rnd in r.rounds]
    capsys.readouterr()
    assert main(["trace", "--draft", "ngram", "--tree", "2", "--out", "x.jsonl"]) == 2
    assert "--tree needs a neural draft model" in capsys.readouterr().err
    assert main(["trace", "--tree", "2,x", "--out", "x.jsonl"]) == 2
    assert "--tree: tree branching must be comma-separated integers" in capsys.readouterr().err
    assert main(["trace", "--tree", "2", "--tree-min-prob", "-1", "--out", "x.jsonl"]) == 2
    assert "--tree-min-prob must be in [0, 1), got -1.0" in capsys.readouterr().err


def test_a_budget_beyond_the_targets_context_is_refused_before_tracing(
    pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompts = tmp_path / "toy.jsonl"
    prompts.write_text(json.dumps({"prompt": "w5"}) + "\n" + json.dumps({"prompt": "w5 w9 w7"}))
    target, draft = pair
    args = ["trace", "--target", str(target), "--draft", str(draft), "--dataset", str(prompts)]
    args += ["--threads", "1", "--max-new-tokens", "253", "--out", str(tmp_path / "t.jsonl")]
    assert main(args) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "edgespec trace: prompt toy-1 (4 tokens) + --max-new-tokens (253) exceeds the target's "
        "context of 256 tokens (lower --max-new-tokens or --max-prompt-tokens)"
    )
    assert not (tmp_path / "t.jsonl").exists()


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize(("flag", "path"), [("--out", "/proc/t.jsonl"), ("--out-dir", "/proc/t")])
def test_an_output_that_cannot_be_written_is_refused_before_any_capture(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, flag: str, path: str
) -> None:
    """``--out /proc/t.jsonl`` captured every request, then failed naming its temporary
    (``/proc/.t.jsonl.PID.tmp``): the folder is now tried when the flags are parsed."""

    def never(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the capture started")

    monkeypatch.setattr("edgespec.learn.traces.command.run", never)
    with pytest.raises(SystemExit) as stop:
        main(["trace", "--draft", "ngram", flag, path])
    assert stop.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    # the reason is the system's: ENOENT for root, EACCES for another user
    assert last.startswith(
        f"edgespec trace: error: argument {flag}: {path}: cannot write in /proc: "
    )
