"""The held-out check on the real pair (Gemma 3 270M + the bundled draft, the shipped
head), one GSM8K test prompt: exact SD is token-identical to target-only, and WISV runs
on both reported channels. Slow: it loads the pair (EDGESPEC_SLOW=1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgespec.reproduce.wisv.real_pair.heldout import run, table


@pytest.mark.slow
def test_one_held_out_prompt_on_the_real_pair(tmp_path: Path) -> None:
    out = tmp_path / "heldout.jsonl"
    rows = run(out, prompts=1, thresholds=(12,))
    record = json.loads(out.read_text())
    assert record["prompt"] == 0 and record["answer"] is not None
    exact = record["runs"][0]
    assert (exact["threshold"], exact["channel"]) == (0, "either")
    assert exact["identical"] and exact["agrees"] and exact["stopped"]
    assert exact["tokens"] == record["target_only"]["tokens"]
    assert [(r["threshold"], r["channel"]) for r in record["runs"][1:]] == [
        (12, "poor"),
        (12, "good"),
    ]
    assert all(r["upload"] == "fh" for r in record["runs"][1:])
    assert rows == table([record]) and rows[0]["speedup"] == 1.0
    # resumable: a rerun finds the prompt done and runs nothing
    assert run(out, prompts=1, thresholds=(12,)) == rows
    assert len(out.read_text().splitlines()) == 1
