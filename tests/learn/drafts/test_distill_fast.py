"""Faster distillation data: trimmed-head generation and teacher-forced text labels."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from edgespec.cli import main
from edgespec.learn.drafts.distill_data import (
    GenerationSettings,
    generate_batch,
    generate_batch_trimmed,
)
from edgespec.learn.drafts.distill_text import label_batch, label_texts
from edgespec.learn.drafts.samples import load_shards
from tests.models.tiny import VOCAB, tiny_target

PROMPTS = [[2, 5, 9, 11, 30], [2, 7], [2, 40, 41, 42]]


def test_trimmed_generation_over_the_whole_vocabulary_equals_full_greedy() -> None:
    model = tiny_target()
    settings = GenerationSettings(max_new_tokens=8, top_k=3)
    full = generate_batch(model, PROMPTS, pad_id=0, eos_ids={1}, settings=settings)
    fast = generate_batch_trimmed(model, PROMPTS, 0, {1}, settings, list(range(VOCAB)))
    for key in ("output_ids", "topk_ids"):
        for a, b in zip(full[key], fast[key], strict=True):
            assert a.tolist() == b.tolist()


def test_trimmed_generation_takes_the_argmax_among_the_head_tokens() -> None:
    model = tiny_target()
    kept = list(range(3, VOCAB, 2))  # odd ids from 3 (no EOS)
    settings = GenerationSettings(max_new_tokens=5, top_k=2)
    fast = generate_batch_trimmed(model, PROMPTS, 0, {1}, settings, kept)
    for row, ids in enumerate(PROMPTS):
        context = list(ids)
        for _ in range(5):
            logits = model(torch.tensor([context])).logits[0, -1]
            masked = torch.full_like(logits, float("-inf"))
            masked[kept] = logits[kept]
            context.append(int(masked.argmax()))
        assert fast["output_ids"][row].tolist() == context[len(ids) :]


def test_teacher_forced_labels_are_the_targets_argmax_at_each_position() -> None:
    model = tiny_target()
    kept = list(range(VOCAB))
    seqs = [[2, 5, 9, 11, 30, 31], [2, 7, 8]]
    out = label_batch(model, seqs, kept, top_k=3)
    for row, seq in enumerate(seqs):
        logits = model(torch.tensor([seq])).logits[0]
        assert out["prompt_ids"][row].tolist() == seq[:1]
        assert out["output_ids"][row].tolist() == seq[1:]
        # position j's label is the target's choice after seq[: j + 1]: unaffected by padding
        assert out["topk_ids"][row][:, 0].tolist() == logits[:-1].argmax(-1).tolist()


def test_label_texts_writes_and_resumes_shards(tmp_path: Path) -> None:
    class _Tok:
        bos_token_id = 2

        def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
            return {"input_ids": [int(t) for t in text.split()]}

    model = tiny_target()
    texts = ["5 6 7 8 9", "10 11", "12", "13 14 15 16 17 18 19 20"]  # "12" is too short
    calls: list[int] = []
    done = label_texts(
        model,
        _Tok(),
        texts,
        tmp_path,
        list(range(VOCAB)),
        max_tokens=5,
        batch_size=2,
        progress=lambda i, n, s: calls.append(i),
    )
    assert done == 2 and calls == [1, 2]
    samples = load_shards(tmp_path)
    assert [len(s.output_ids) for s in samples] == [4, 2, 4]
    again: list[int] = []
    label_texts(
        model,
        _Tok(),
        texts,
        tmp_path,
        [3],
        max_tokens=5,
        batch_size=2,
        progress=lambda i, n, s: again.append(i),
    )
    assert again == []


def test_train_draft_fast_head_without_a_draft_is_a_clear_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["train", "draft", "--out", str(tmp_path / "d"), "--data-dir", str(tmp_path)]
    assert main([*args, "--fast-head"]) == 2
    assert "--fast-head needs --init-from" in capsys.readouterr().err
    assert main([*args, "--init-from", str(tmp_path / "missing")]) == 2
    assert f"--init-from '{tmp_path / 'missing'}' does not exist: " in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--batch-size", "0", "must be >= 1, got 0"),
        ("--kept-tokens", "0", "must be >= 1, got 0"),
        ("--train-minutes", "-1", "must be > 0, got -1"),
        ("--text-minutes", "0", "must be > 0, got 0"),
        ("--conversations", "-5", "must be >= 1, got -5"),
        # a budget over 10,000,000 minutes: 1e308 x 60 was inf seconds, a ValueError traceback
        ("--train-minutes", "1e308", "must be at most 10,000,000 minutes, got 1e+308"),
        ("--gen-minutes", "10000001", "must be at most 10,000,000 minutes, got 10000001.0"),
        ("--text-minutes", "1e9", "must be at most 10,000,000 minutes, got 1000000000.0"),
    ],
)
def test_train_draft_refuses_a_count_or_budget_outside_its_range_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, message: str
) -> None:
    args = ["train", "draft", "--out", str(tmp_path / "d"), "--data-dir", str(tmp_path / "s")]
    with pytest.raises(SystemExit) as stop:
        main([*args, flag, value])
    assert stop.value.code == 2
    assert f"argument {flag}: {message}" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_train_draft_takes_a_budget_of_exactly_the_largest_minutes(tmp_path: Path) -> None:
    from edgespec.cli import build_parser
    from edgespec.learn.drafts.command import draft_job

    args = build_parser().parse_args(
        ["train", "draft", "--out", str(tmp_path / "d"), "--data-dir", str(tmp_path / "s"),
         "--train-minutes", "10000000", "--gen-minutes", "1e7", "--text-minutes", "1e7",
         "--text-data-dir", str(tmp_path / "t")]
    )  # fmt: skip
    job = draft_job(args)
    assert job.labelling is not None
    assert (job.training.time_budget_s, job.gen_minutes, job.labelling.minutes) == (6e8, 1e7, 1e7)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--conversations", "5"], "--conversations sets the text labelling, which only "
         "--text-data-dir runs: give --text-data-dir DIR too, or leave --conversations out"),
        (["--text-max-tokens", "20"], "--text-max-tokens sets the text labelling, which only "
         "--text-data-dir runs: give --text-data-dir DIR too, or leave --text-max-tokens out"),
        (["--skip-generate", "--sharegpt-limit", "50"], "--sharegpt-limit sets the generation, "
         "which --skip-generate skips: leave --sharegpt-limit or --skip-generate out"),
        (["--max-new-tokens", "8", "--skip-generate"], "--max-new-tokens sets the generation, "
         "which --skip-generate skips: leave --max-new-tokens or --skip-generate out"),
        (["--skip-generate", "--sample-temperature", "0.7", "--fast-head", "--init-from", "{x}"],
         "--sample-temperature sets the generation, which --skip-generate skips: leave "
         "--sample-temperature or --skip-generate out"),
        (["--train-data-dir", "{s}/"], "--train-data-dir {s} is --data-dir's folder again: its "
         "shards would be trained on twice; give each folder once"),
        (["--train-data-dir", "{x}", "--train-data-dir", "{x}"], "--train-data-dir {x} is "
         "--train-data-dir's folder again: its shards would be trained on twice; give each "
         "folder once"),
    ],
)  # fmt: skip
def test_train_draft_refuses_flags_that_would_do_nothing_or_count_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    """Text flags without --text-data-dir were taken and labelled nothing (exit 0), as were
    generation flags with --skip-generate; a shard folder given again was trained on twice
    (21 training sequences for 7)."""
    (tmp_path / "s").mkdir()
    (tmp_path / "x").mkdir()
    given = [f.format(s=tmp_path / "s", x=tmp_path / "x") for f in flags]
    args = ["train", "draft", "--out", str(tmp_path / "d"), "--data-dir", str(tmp_path / "s")]
    assert main([*args, *given]) == 2
    said = message.format(s=tmp_path / "s", x=tmp_path / "x")
    assert capsys.readouterr().err == f"edgespec train draft: {said}\n"


def test_sharegpt_conversations_use_the_prompt_template_and_the_training_split(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from edgespec.learn.drafts import distill_text

    def conv(cid: str, *turns: tuple[str, str]) -> dict[str, Any]:
        return {"id": cid, "conversations": [{"from": f, "value": v} for f, v in turns]}

    rows = [
        conv("a", ("human", " hi "), ("gpt", "yo"), ("human", "more")),
        conv("held-out", ("human", "x"), ("gpt", "y")),
        conv("b", ("gpt", "starts with the model")),
        conv("c", ("human", "q"), ("gpt", "r")),
    ]
    monkeypatch.setattr(distill_text, "sharegpt_rows", lambda: iter(rows))
    monkeypatch.setattr(
        distill_text, "sharegpt_split", lambda cid: "test" if cid == "held-out" else "train"
    )
    assert list(distill_text.sharegpt_conversations()) == [
        "User: hi\nAssistant: yo\nUser: more",
        "User: q\nAssistant: r",
    ]
    assert list(distill_text.sharegpt_conversations(skip=1, limit=1)) == ["User: q\nAssistant: r"]


def test_label_texts_refuses_a_too_short_token_limit(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_tokens must be >= 3, got 2"):
        label_texts(tiny_target(), None, ["5 6 7"], tmp_path, [3], max_tokens=2)
    assert not list(tmp_path.iterdir())


def _sampled(seed: int, temperature: float, new_tokens: int = 6) -> dict[str, list[Any]]:
    settings = GenerationSettings(max_new_tokens=new_tokens, top_k=2, temperature=temperature)
    generator = torch.Generator().manual_seed(seed)
    return generate_batch_trimmed(
        tiny_target(), PROMPTS, 0, set(), settings, list(range(3, VOCAB)), generator
    )


def test_sampled_generation_is_seeded_and_keeps_the_argmax_labels() -> None:
    model = tiny_target()
    a, b, c = _sampled(7, 2.0), _sampled(7, 2.0), _sampled(8, 2.0)
    assert [t.tolist() for t in a["output_ids"]] == [t.tolist() for t in b["output_ids"]]
    assert [t.tolist() for t in a["output_ids"]] != [t.tolist() for t in c["output_ids"]]
    greedy = generate_batch_trimmed(
        model,
        PROMPTS,
        0,
        set(),
        GenerationSettings(max_new_tokens=6, top_k=2),
        list(range(3, VOCAB)),
    )
    assert [t.tolist() for t in a["output_ids"]] != [t.tolist() for t in greedy["output_ids"]]
    for row, ids in enumerate(PROMPTS):
        context = torch.tensor([[*ids, *a["output_ids"][row].tolist()]])
        logits = model(context).logits[0, len(ids) - 1 : -1, 3:]
        # labels: the target's argmax at each *sampled* context, not the sampled token
        assert a["topk_ids"][row][:, 0].tolist() == (logits.argmax(-1) + 3).tolist()


def test_sampled_first_tokens_follow_the_tempered_softmax() -> None:
    model = tiny_target()
    with torch.no_grad():
        model.lm_head.weight.mul_(25)  # a peaked distribution, so the temperature matters
    temperature, draws = 1.5, 3000
    settings = GenerationSettings(max_new_tokens=1, top_k=1, temperature=temperature)
    out = generate_batch_trimmed(
        model,
        [PROMPTS[0]] * draws,
        0,
        set(),
        settings,
        list(range(VOCAB)),
        torch.Generator().manual_seed(0),
    )
    counts = torch.bincount(torch.cat(out["output_ids"]).long(), minlength=VOCAB).double()
    logits = model(torch.tensor([PROMPTS[0]])).logits[0, -1].detach().double()
    expected = torch.softmax(logits / temperature, -1) * draws
    big = expected >= 5  # Pearson's χ² over the well-populated cells, the rest pooled
    assert 5 <= int(big.sum()) < VOCAB
    observed = torch.cat([counts[big], counts[~big].sum(0, keepdim=True)])
    wanted = torch.cat([expected[big], expected[~big].sum(0, keepdim=True)])
    chi2 = float(((observed - wanted) ** 2 / wanted).sum())
    dof = int(big.sum())  # cells - 1
    assert chi2 < dof + 4 * (2 * dof) ** 0.5, (chi2, dof)


def test_sampling_needs_the_cut_head(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["train", "draft", "--out", str(tmp_path / "d"), "--data-dir", str(tmp_path)]
    assert main([*args, "--sample-temperature", "0.7"]) == 2
    assert "--sample-temperature needs --fast-head" in capsys.readouterr().err
    assert main([*args, "--train-data-dir", str(tmp_path / "nope")]) == 2
    assert "--train-data-dir" in capsys.readouterr().err


def test_train_draft_adds_the_extra_shard_directories(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from edgespec.learn.drafts.distill_data import write_shards
    from tests.learn.traces.test_command import tiny_tokenizer
    from tests.models.tiny import tiny_draft

    target = tiny_target()
    target.save_pretrained(tmp_path / "target")
    tiny_tokenizer().save_pretrained(tmp_path / "target")
    kept = list(range(3, VOCAB))
    tiny_draft(kept).save(tmp_path / "draft")
    settings = GenerationSettings(max_new_tokens=5, top_k=2, temperature=1.0, seed=3)

    def make(index: int) -> dict[str, Any]:
        gen = torch.Generator().manual_seed(index)
        return generate_batch_trimmed(target, PROMPTS, 0, set(), settings, kept, gen)

    assert write_shards(tmp_path / "main", 2, make) == 2  # 6 sequences
    assert write_shards(tmp_path / "extra", 3, make) == 3  # 9 more
    args = ["train", "draft", "--target", str(tmp_path / "target"), "--skip-generate"]
    args += ["--init-from", str(tmp_path / "draft"), "--data-dir", str(tmp_path / "main")]
    args += ["--train-data-dir", str(tmp_path / "extra"), "--out", str(tmp_path / "out")]
    args += ["--epochs", "1", "--tokens-per-step", "64", "--threads", "1"]
    assert main(args) == 0
    err = " ".join(capsys.readouterr().err.split())  # the console may wrap lines
    # 6 + 9 sequences of the same 3 prompts; 1 held out, and the 1 + 3 others of its prompt
    assert "10 training / 1 validation sequences" in err
    assert "(4 sharing a validation prompt left out)" in err
    assert (tmp_path / "out" / "config.json").is_file()
