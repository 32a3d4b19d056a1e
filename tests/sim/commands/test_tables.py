"""What ``edgespec sim --sweep`` and ``--capacity`` print on an 80-column terminal: every
header whole (wrapped at spaces and after dots, never cut), the SLO classes by target
token speed, plain numbers."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
import yaml

from edgespec.cli import main
from tests.sim.helpers import tiny_scenario

RUN_NAMES = ["goodput tok/s", "TPOT p50 ms", "acceptance", "SLO violation", "server util"]


@pytest.fixture
def scenario_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("COLUMNS", "80")
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_scenario(duration_s=5.0)))  # slow 2 tok/s, fast 8
    return path


def headers(text: str, title: str) -> list[str]:
    """The headers of the table after ``title``, each's lines joined (after a dot directly,
    else with a space)."""
    lines = text[text.index(title) :].splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("┡"))
    joined: list[str] = []
    for line in lines[1:rule]:
        pieces = [c.strip() for c in line.split("┃")[1:-1]]
        joined = joined or ["" for _ in pieces]
        for i, piece in enumerate(pieces):
            if piece:
                glue = "" if not joined[i] or joined[i].endswith(".") else " "
                joined[i] += glue + piece
    return joined


def test_a_sweep_prints_whole_headers_and_classes_by_target_at_80_columns(
    scenario_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = ["auto_topology.devices.0.count", "links.wan.rtt_ms"]
    sweep = ["--sweep", f"{keys[0]}=4,8", f"{keys[1]}=10,50"]
    assert main(["sim", str(scenario_file), *sweep, "--quiet", "--out", str(tmp_path / "s")]) == 0
    text = capsys.readouterr().out
    *tables, last = text.splitlines()
    assert "…" not in text and max(len(line) for line in tables) <= 80
    assert (
        last == f"sweep: 4 runs → {tmp_path / 's' / 'sweep.json'}, {tmp_path / 's' / 'sweep.csv'}"
    )
    assert headers(text, "sweep") == [*keys, *RUN_NAMES]
    assert headers(text, "SLO attainment per class") == [*keys, "slow", "fast"]  # 2, 8 tok/s
    assert not re.search(r"\de[+-]\d", text)
    with (tmp_path / "s" / "sweep.csv").open(newline="") as rows:
        read = [(r["num_unfinished_requests"], r["num_unfinished_missed"])
                for r in csv.DictReader(rows)]  # fmt: skip
    counts = sorted(int(n) for n, _ in read)
    assert counts[0] > 0  # a closed-loop fleet always has requests running at the end
    line = f"unfinished at the end: {counts[0]} to {counts[-1]} requests a run"
    missed = sorted(int(m) for _, m in read)
    if missed[-1]:
        line += f" ({missed[0]} to {missed[-1]} of them sure to miss)"
    assert line in " ".join(text.split())


def test_a_capacity_search_prints_whole_headers_at_80_columns(
    scenario_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "auto_topology.devices.0.count"
    args = ["sim", str(scenario_file), "duration_s=20", "--capacity", key, "--lo", "4", "--hi", "8"]
    assert main([*args, "--epsilon", "1", "--quiet", "--out", str(tmp_path / "c")]) == 0
    text = capsys.readouterr().out
    *tables, last = text.splitlines()
    assert "…" not in text and max(len(line) for line in tables) <= 80
    assert last.startswith(f"capacity {key} at epsilon=1.0: ")  # the path whole, one line
    assert last.endswith(f" → {tmp_path / 'c' / 'capacity.json'}")
    assert headers(text, "probes") == [key, *RUN_NAMES]
    assert headers(text, "SLO attainment per class") == [key, "slow", "fast"]
