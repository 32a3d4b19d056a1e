"""The shipped default threshold from a held-out agreement table, and what a user asking
for a more permissive threshold is told."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from edgespec.config import ConfigFileError
from edgespec.policies.semantic.agreement import (
    AgreementTable,
    agreement_note,
    bundled_path,
    load_agreement,
)


def _table(cells: list[tuple[int, str, float, float | None]]) -> AgreementTable:
    data = {
        "cells": [
            {"threshold": t, "channel": c, "prompts": 50, "agreement": a, "speedup": s}
            for t, c, a, s in cells
        ]
    }
    return AgreementTable.from_json(data, "t")


def test_the_default_is_the_largest_threshold_keeping_95_percent_on_both_channels() -> None:
    table = _table([
        (0, "either", 1.0, 1.0),
        (1, "poor", 0.96, 1.1), (1, "good", 0.98, 1.05),
        (4, "poor", 0.90, 1.4), (4, "good", 0.97, 1.2),
        (12, "poor", 0.0, 2.4), (12, "good", 0.1, 2.2),
    ])  # fmt: skip
    assert table.default_threshold == 1
    assert agreement_note(1, table) is None and agreement_note(0, table) is None
    note = agreement_note(12, table)
    assert note == (
        "WISV threshold T = 12 is above the bundled Gemma 3 270M head's default T = 1 (the "
        "largest that kept >= 95% of held-out GSM8K answers); measured at T = 12: the final "
        "answer agreed with target-only decoding on 0% on the poor channel (speed-up 2.40x "
        "over exact SD), 10% on the good channel (speed-up 2.20x over exact SD) (50 prompts; "
        "docs/REPRODUCE.md, WISV on the real pair)"
    )
    # an unmeasured T reports the nearest measured ones below and above it
    between = agreement_note(8, table) or ""
    assert "not measured; at T = 4: the final answer agreed" in between
    assert "; at T = 12: the final answer agreed" in between
    most = agreement_note(16, table) or ""  # none measured above: the nearest below
    told = "; every mismatch is accepted (the target corrects no draft token); not measured; at"
    assert f"{told} T = 12: " in most


def test_nothing_kept_means_exact_sd_and_no_table_means_no_note(tmp_path: Path) -> None:
    table = _table([(0, "either", 1.0, 1.0), (1, "poor", 0.5, 1.4), (1, "good", 0.5, 1.5)])
    assert table.default_threshold == 0
    assert "default T = 0" in (agreement_note(1, table) or "")
    assert agreement_note(12, None) is None
    assert load_agreement(tmp_path / "none.json") is None


def test_the_bundled_table_keeps_95_percent_at_its_default() -> None:
    from edgespec.policies.semantic.bundled import bundled_dir

    table = load_agreement()
    assert table is not None and table.source == str(bundled_path())
    shipped = (bundled_dir() / "gemma3-270m-head.json").read_bytes()
    assert table.head_sha256 == hashlib.sha256(shipped).hexdigest()  # measured the shipped head
    kept = table.at(table.default_threshold)
    assert kept and all(c.agreement >= 0.95 and c.prompts >= 50 for c in kept)
    data = json.loads(bundled_path().read_text())
    assert (
        data["split"] == "GSM8K test"
        and data["command"] == "edgespec reproduce wisv-heldout --out runs/wisv"
    )


def test_the_bundled_pairs_draft_gets_the_shipped_default_and_is_told_what_it_kept() -> None:
    from edgespec.policies.semantic.agreement import default_note, shipped_default

    table = _table([(0, "either", 1.0, 1.0), (1, "poor", 0.96, 1.04), (1, "good", 0.96, 1.03)])
    assert shipped_default("gemma3-270m-draft", table) == 1
    assert shipped_default("ngram", table) is None  # another pair: no measured default
    assert shipped_default("gemma3-270m-draft", None) is None
    assert default_note(table) == (
        "WISV threshold T = 1, the bundled Gemma 3 270M head's shipped default (no "
        "--threshold given): it kept the target's final answer on 96% on the poor channel at "
        "1.04x exact SD's tokens/s, 96% on the good channel at 1.03x exact SD's tokens/s "
        "(50 held-out GSM8K prompts; docs/REPRODUCE.md, WISV on the real pair)"
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"cells": "\xff"}', "{path}: not UTF-8 text (byte 0xff at offset 11)"),  # a traceback
        (b'{"cells":\n[', "{path}:2: not JSON (Expecting value)"),
    ],
)
def test_an_unreadable_agreement_table_is_one_error_naming_the_file(
    tmp_path: Path, data: bytes, message: str
) -> None:
    path = tmp_path / "agreement.json"
    path.write_bytes(data)
    with pytest.raises(ConfigFileError) as error:
        load_agreement(path)
    assert str(error.value) == message.format(path=path)
