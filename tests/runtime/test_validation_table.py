"""docs/RUNTIME.md's request-validation table matches the code and every rule is tested:
each row's message fragment is emitted by the package and asserted by some test."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _rows() -> list[list[str]]:
    text = (ROOT / "docs" / "RUNTIME.md").read_text()
    table = text.split("<!-- validation-table -->")[1].split("<!-- /validation-table -->")[0]
    rows = [line for line in table.strip().splitlines()[2:] if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]


def _texts(folder: str, skip: str = "") -> str:
    return "\n".join(p.read_text() for p in (ROOT / folder).rglob("*.py") if p.name != skip)


def test_the_table_has_rows() -> None:
    assert len(_rows()) >= 30


@pytest.mark.parametrize("row", _rows(), ids=lambda r: f"{r[0]}:{r[1]}:{r[4]}")
def test_each_rule_is_emitted_and_tested(row: list[str]) -> None:
    status, fragment = row[3].strip("`"), row[4].strip("`")
    assert re.fullmatch(r"[A-Z_]+", status), row
    code = _texts("edgespec")
    assert fragment in code, f"no code emits {fragment!r}"
    assert f"ErrorCode.{status}" in code or status == "INVALID_ARGUMENT", row
    tests = _texts("tests", skip=Path(__file__).name)
    assert fragment in tests, f"no test asserts {fragment!r} ({row[2]})"
