"""The shipped prompt/output length tables and the builder that makes them
(python -m edgespec.datasets.length_tables), on tiny data without a tokenizer."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgespec.cli import build_parser
from edgespec.datasets import length_tables as lt

REPO = Path(__file__).resolve().parents[2]
TABLES = sorted((REPO / "edgespec" / "data" / "lengths").glob("*.json"))
KEYS = ["dataset", "source", "tokenizer", "num_samples", "prompt_tokens", "output_tokens"]


def _count(texts: list[str]) -> list[int]:
    return [len(t.split()) for t in texts]


def test_expected_tables_are_shipped() -> None:
    assert {"sharegpt", "humaneval", "gsm8k"} <= {t.stem for t in TABLES}
    assert lt.default_out_dir().resolve() == TABLES[0].parent.resolve()


@pytest.mark.parametrize("path", TABLES, ids=[t.stem for t in TABLES])
def test_table_is_well_formed_and_written_as_the_builder_writes(path: Path, tmp_path: Path) -> None:
    table = json.loads(path.read_text())
    assert list(table) == KEYS
    assert table["dataset"] == path.stem
    assert isinstance(table["source"], str) and table["source"]
    tokenizer = "DSD-Sim" if path.stem == "gsm8k" else "gemma-3"  # gsm8k: DSD-Sim's own trace
    assert isinstance(table["tokenizer"], str) and tokenizer in table["tokenizer"]
    n = table["num_samples"]
    assert type(n) is int and 1 <= n <= 2000
    for key in ("prompt_tokens", "output_tokens"):
        values = table[key]
        assert len(values) == n, key
        assert all(type(v) is int and v > 0 for v in values), key
    lt.write_table(tmp_path / "t.json", table)
    assert (tmp_path / "t.json").read_text() == path.read_text()


def test_truncated_json_array_keeps_complete_items() -> None:
    assert lt.complete_json_items('[{"a": 1}, {"b": [2, 3]}]\n') == (
        [{"a": 1}, {"b": [2, 3]}],
        False,
    )
    text = '[\n  {"a": 1},\n  {"b": "cut here'
    assert lt.complete_json_items(text) == ([{"a": 1}], True)


def test_build_table_samples_pairs_with_fixed_seed() -> None:
    pairs = [("p" * (i + 1), "o" * (2 * i + 1)) for i in range(10)]
    table = lt.build_table(
        "toy", pairs, "unit test", lambda texts: [len(t) for t in texts], max_pairs=4, seed=3
    )
    again = lt.build_table(
        "toy", pairs, "unit test", lambda texts: [len(t) for t in texts], max_pairs=4, seed=3
    )
    assert table == again
    assert table["num_samples"] == 4
    assert table["source"] == "unit test; 4 pairs drawn with numpy default_rng(3)"
    # Pairs stay paired: output length = 2 * prompt length - 1 for every sample.
    assert [2 * p - 1 for p in table["prompt_tokens"]] == table["output_tokens"]
    assert table["prompt_tokens"] == sorted(table["prompt_tokens"])


def test_build_table_leaves_out_pairs_without_tokens() -> None:
    pairs = [(f"p {i} " * (i % 4), f"o {i}") for i in range(10)]
    table = lt.build_table("toy", pairs, "src", _count, max_pairs=10, seed=0)
    assert table["num_samples"] == 7  # i % 4 == 0: the prompt is empty
    assert all(n > 0 for n in table["prompt_tokens"])


def test_turn_pairs_takes_human_then_gpt_turns() -> None:
    conversations: list[dict[str, Any]] = [
        {"conversations": [
            {"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"},
            {"from": "human", "value": "again"}, {"from": "human", "value": "?"},
            {"from": "gpt", "value": " "},
        ]},
        {"id": "no turns"},
    ]  # fmt: skip
    assert lt.turn_pairs(conversations) == [("hi", "hello")]


def test_build_tables_writes_tables_with_references_and_skips_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    for split in ("test", "train"):
        rows = [{"prompt": f"q {split} {i}", "answer": "a " * (i + 1)} for i in range(3)]
        (prompts / f"gsm8k_{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (prompts / f"cnndm_{split}.jsonl").write_text('{"prompt": "article"}\n')
    out = tmp_path / "lengths"
    status = lt.build_tables(["gsm8k", "cnndm"], prompts, out, _count, max_pairs=4, seed=1)
    assert status == 1  # cnndm has no reference field
    table = json.loads((out / "gsm8k.json").read_text())
    assert table["num_samples"] == 4 and table["prompt_tokens"] == [3, 3, 3, 3]
    assert not (out / "cnndm.json").exists()
    captured = capsys.readouterr()
    assert "gsm8k.json: 4 pairs; prompt tokens mean 3.0" in captured.out
    assert "skipped cnndm:" in captured.err and "no reference output" in captured.err


DOC_ROW = re.compile(
    r"^\| `(?P<name>\w+)` \| (?P<n>\d+) \| (?P<prompt>[\d.]+ / \d+ / \d+) \| "
    r"(?P<output>[\d.]+ / \d+ / \d+) \|",
    re.MULTILINE,
)


def _stats(values: list[int]) -> str:
    """mean / p50 / max as the builder prints them (``summary_line``)."""
    data = np.asarray(values)
    return f"{data.mean():.1f} / {np.median(data):.0f} / {data.max()}"


def test_metrics_doc_lists_every_shipped_table_with_its_numbers() -> None:
    doc = (REPO / "docs" / "METRICS.md").read_text()
    rows = {m["name"]: m for m in DOC_ROW.finditer(doc)}
    assert sorted(rows) == sorted(t.stem for t in TABLES)
    for path in TABLES:
        table = json.loads(path.read_text())
        row = rows[path.stem]
        assert int(row["n"]) == table["num_samples"], path.stem
        assert row["prompt"] == _stats(table["prompt_tokens"]), path.stem
        assert row["output"] == _stats(table["output_tokens"]), path.stem


def test_a_plain_build_leaves_the_dsdsim_gsm8k_table_alone() -> None:
    parser = build_parser()
    command = ["data", "lengths"]
    assert parser.parse_args(command).datasets == ["sharegpt", "humaneval"]
    assert parser.parse_args([*command, "--datasets", "gsm8k"]).datasets == ["gsm8k"]
    with pytest.raises(SystemExit):
        parser.parse_args([*command, "--datasets", "gsm9k"])


def test_build_table_keeps_every_pair_when_max_pairs_exceeds_them() -> None:
    pairs = [("a b", "c"), ("d", "e f g")]
    table = lt.build_table("toy", pairs, "src", _count, max_pairs=10, seed=0)
    assert table["num_samples"] == 2
    assert (table["prompt_tokens"], table["output_tokens"]) == ([2, 1], [1, 3])


def test_shared_pairs_take_the_first_reference_field_present(tmp_path: Path) -> None:
    rows = [
        {"prompt": "p0", "highlights": "h"},
        {"prompt": "p1", "summary": "s", "highlights": "h"},
        {"prompt": "p2"},
    ]
    (tmp_path / "cnndm_test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "cnndm_train.jsonl").write_text(json.dumps({"prompt": "q", "completion": "c"}))
    pairs, source = lt.shared_pairs("cnndm", tmp_path)
    assert pairs == [("p0", "h"), ("p1", "s"), ("q", "c")]
    assert source == "shared/data/prompts/cnndm_{test,train}.jsonl (prompt + reference)"


@pytest.mark.parametrize(
    ("train", "problem"),
    [
        ('{"prompt": "q", "answer": "a"}\n{"prompt": "q"\n',
         ":2: not valid JSON (Expecting ',' delimiter)"),
        ('{"answer": "b"}\n', ":1: expected a string field 'prompt' (no such field)"),
        ('{"prompt": "q", "answer": 42}\n', ":1: expected a string field 'answer' (got int)"),
        ('"q"\n', ":1: a JSON str, not an object"),
    ],
)  # fmt: skip
def test_a_bad_prompt_file_line_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], train: str, problem: str
) -> None:
    from edgespec.errors import UserInputError

    (tmp_path / "gsm8k_test.jsonl").write_text('{"prompt": "a", "answer": "b"}\n')
    (tmp_path / "gsm8k_train.jsonl").write_text(train)
    out = tmp_path / "lengths"
    with pytest.raises(UserInputError) as refused:
        lt.build_tables(["gsm8k"], tmp_path, out, _count, max_pairs=4, seed=1)
    assert str(refused.value) == f"{tmp_path / 'gsm8k_train.jsonl'}{problem}"
    assert list(out.iterdir()) == []  # nothing written


def test_tables_are_written_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[Path] = []
    monkeypatch.setattr(lt, "write_text_atomically", lambda path, text: written.append(path))
    lt.write_table(tmp_path / "gsm8k.json", {"dataset": "gsm8k"})
    assert written == [tmp_path / "gsm8k.json"] and not (tmp_path / "gsm8k.json").exists()


@pytest.mark.parametrize(
    ("flags", "message"),
    [  # were found after the tokenizer loaded (~40 s): "Not a directory", a table built twice
        (
            ["--datasets", "humaneval", "--prompts-dir", "/dev/null"],
            "--prompts-dir /dev/null: not a folder",
        ),
        (
            ["--datasets", "humaneval", "--prompts-dir", "/no/such/prompts"],
            "--prompts-dir /no/such/prompts: no such folder",
        ),
        (["--datasets", "gsm8k", "humaneval", "gsm8k"], "--datasets: gsm8k is given twice"),
    ],
)
def test_sources_are_checked_before_the_tokenizer_loads(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    message: str,
) -> None:
    from edgespec.cli import main

    def never() -> None:
        raise AssertionError("the tokenizer loaded")

    monkeypatch.setattr(lt, "load_tokenizer", never)
    assert main(["data", "lengths", *flags, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"edgespec data lengths: {message}")
    assert err.count("\n") == 1
