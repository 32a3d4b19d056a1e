"""docs/METRICS.md's tables of a run folder's record files (``requests.csv`` and
``.parquet``, ``batches.parquet``, ``rounds.csv`` and ``.parquet``) list the columns that
``edgespec sim ... record_rounds=true --out DIR`` writes, in file order, each with its
Parquet type, so the doc cannot drift from the files."""

from __future__ import annotations

import csv
import dataclasses
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from edgespec.cli import main
from edgespec.core.types import RequestRecord, RoundRecord
from edgespec.metrics.record_files import read_rounds
from tests.sim.helpers import tiny_scenario

DOC = (Path(__file__).resolve().parents[2] / "docs" / "METRICS.md").read_text()
SECTION = DOC.split("## Run folder", 1)[1].split("\n## ", 1)[0]
TYPES = {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
FILES = {  # the paragraph that introduces a table → the files it describes
    "`requests.csv`, `requests.parquet`:": ("requests.csv", "requests.parquet"),
    "`batches.parquet`:": ("batches.parquet",),
    "`rounds.csv`, `rounds.parquet`": ("rounds.csv", "rounds.parquet"),
}


def documented(lead: str) -> list[tuple[str, str, bool]]:
    """(column, type, nullable) of the ``| column | type | meaning |`` table after the
    paragraph that starts with ``lead``."""
    after = SECTION[SECTION.index(f"\n{lead}") :]
    table = after[after.index("\n| column | type | meaning |") :].split("\n\n", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| (\w+)( or null)? \| .+ \|$", table, re.MULTILINE)
    assert len(rows) == len(table.strip().splitlines()) - 2, table  # every row read
    return [(name, kind, bool(null)) for name, kind, null in rows]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("run")
    scenario = folder / "tiny.yaml"
    scenario.write_text(yaml.safe_dump(tiny_scenario(duration_s=3.0)))
    out = folder / "out"
    args = ["sim", str(scenario), "record_rounds=true", "--quiet", "--no-plots", "--out"]
    assert main([*args, str(out)]) == 0
    return out


def test_each_record_file_is_documented(run_dir: Path) -> None:
    written = {p.name for p in run_dir.iterdir() if p.suffix in (".csv", ".parquet")}
    assert written == {name for names in FILES.values() for name in names}


@pytest.mark.parametrize("lead", list(FILES))
def test_the_documented_columns_are_the_files(lead: str, run_dir: Path) -> None:
    rows = documented(lead)
    for name in FILES[lead]:
        path = run_dir / name
        if name.endswith(".csv"):
            with path.open(newline="") as f:
                assert next(csv.reader(f)) == [column for column, _, _ in rows], name
            continue
        schema = pq.read_schema(path)
        assert [(f.name, f.type) for f in schema] == [(c, TYPES[k]) for c, k, _ in rows], name


def test_the_columns_marked_null_are_those_that_can_be(run_dir: Path) -> None:
    """``or null``: the fields typed ``X | None`` (and ``slo_met``, None without a target)."""
    for lead, cls in (("`requests.csv`, `requests.parquet`:", RequestRecord),
                      ("`rounds.csv`, `rounds.parquet`", RoundRecord)):  # fmt: skip
        optional = {f.name for f in dataclasses.fields(cls) if str(f.type).endswith("| None")}
        if cls is RequestRecord:
            optional.add("slo_met")
        assert {name for name, _, null in documented(lead) if null} == optional


def test_a_round_read_back_is_fused_or_not_not_a_float(run_dir: Path) -> None:
    """``fused`` was written as a double (0.0) for want of a Parquet type for ``bool``."""
    rounds = read_rounds(run_dir)
    assert rounds and all(type(r.fused) is bool for r in rounds)
