"""The shipped prompt/output length tables and the script that builds them."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
TABLES = sorted((REPO / "edgespec" / "data" / "lengths").glob("*.json"))
KEYS = ["dataset", "source", "tokenizer", "num_samples", "prompt_tokens", "output_tokens"]


def test_expected_tables_are_shipped() -> None:
    assert {"sharegpt", "humaneval"} <= {t.stem for t in TABLES}


@pytest.mark.parametrize("path", TABLES, ids=[t.stem for t in TABLES])
def test_table_is_well_formed(path: Path) -> None:
    table = json.loads(path.read_text())
    assert list(table) == KEYS
    assert table["dataset"] == path.stem
    assert isinstance(table["source"], str) and table["source"]
    assert isinstance(table["tokenizer"], str) and "gemma-3" in table["tokenizer"]
    n = table["num_samples"]
    assert type(n) is int and 1 <= n <= 2000
    for key in ("prompt_tokens", "output_tokens"):
        values = table[key]
        assert len(values) == n, key
        assert all(type(v) is int and v > 0 for v in values), key


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "build_length_tables", REPO / "scripts" / "build_length_tables.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_truncated_json_array_keeps_complete_items() -> None:
    script = _script()
    assert script.complete_json_items('[{"a": 1}, {"b": [2, 3]}]') == (
        [{"a": 1}, {"b": [2, 3]}],
        False,
    )
    text = '[\n  {"a": 1},\n  {"b": "cut here'
    assert script.complete_json_items(text) == ([{"a": 1}], True)


def test_build_table_samples_pairs_with_fixed_seed() -> None:
    script = _script()
    pairs = [("p" * (i + 1), "o" * (2 * i + 1)) for i in range(10)]
    table = script.build_table(
        "toy", pairs, "unit test", lambda texts: [len(t) for t in texts], max_pairs=4, seed=3
    )
    again = script.build_table(
        "toy", pairs, "unit test", lambda texts: [len(t) for t in texts], max_pairs=4, seed=3
    )
    assert table == again
    assert table["num_samples"] == 4
    # Pairs stay paired: output length = 2 * prompt length - 1 for every sample.
    assert [2 * p - 1 for p in table["prompt_tokens"]] == table["output_tokens"]
    assert table["prompt_tokens"] == sorted(table["prompt_tokens"])
