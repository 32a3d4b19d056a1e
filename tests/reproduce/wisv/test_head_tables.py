"""What the WISV rows read of a head's table besides its shares on the two links: the
shares it gives on any channel and its labels' rule, from the bundled tables; a malformed
record is a one-line error naming the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgespec.errors import UserInputError
from edgespec.reproduce.wisv.expected import share_range
from edgespec.reproduce.wisv.head_tables import HeadTable, head_table
from edgespec.reproduce.wisv.setup import ABLATION_TABLE, TABLE
from edgespec.sim.model.reject_table import load_reject_table, table_path


def _read(name: str) -> HeadTable:
    path = table_path(name)
    return head_table(path, load_reject_table(str(path)), 12.0)


def test_the_bundled_tables_record_their_labels() -> None:
    wisv, plain = _read(TABLE), _read(ABLATION_TABLE)
    assert (wisv.budget, wisv.label_shares) == ("kappa-critical", (0.2477, 0.5138))
    assert (plain.budget, plain.label_shares) == ("keep-critical", (0.5711, 0.5711))
    assert (wisv.low, wisv.high, plain.low, plain.high) == (0.1194, 0.2714, 0.329, 0.3344)
    span = share_range({TABLE: (wisv.low, wisv.high)}, {TABLE: 921}, 12.0)
    assert span is not None and span.holds(0.2) and not span.holds(0.5)
    assert share_range({TABLE: (wisv.low, wisv.high)}, {}, 12.0) is None


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"budget": 3}, "budget must be a name, got 3"),
        ({"label_reject_share": {"poor": 0.2}}, "label_reject_share must hold numbers poor and"),
        (
            {"label_reject_share": {"poor": 0.2, "good": 1.5}},
            "label_reject_share must be in [0, 1]",
        ),
    ],
)
def test_a_malformed_label_record_names_the_file_and_field(
    tmp_path: Path, record: dict[str, object], message: str
) -> None:
    data = json.loads(table_path(TABLE).read_text(encoding="utf-8"))
    path = tmp_path / "head-acceptance.json"
    path.write_text(json.dumps({**data, **record}), encoding="utf-8")
    with pytest.raises(UserInputError) as err:
        head_table(path, load_reject_table(str(path)), 12.0)
    assert str(err.value).startswith(f"{path}: {message}")
    assert "\n" not in str(err.value)


def test_a_table_without_its_labels_record_reads_none(tmp_path: Path) -> None:
    data = json.loads(table_path(TABLE).read_text(encoding="utf-8"))
    del data["budget"], data["label_reject_share"]
    path = tmp_path / "head-acceptance.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    head = head_table(path, load_reject_table(str(path)), 12.0)
    assert (head.budget, head.label_shares) == (None, None)
