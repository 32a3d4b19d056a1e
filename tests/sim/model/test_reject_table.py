"""A reject-share table that cannot be read as UTF-8 JSON: one error at the config field,
naming the file (was a UnicodeDecodeError's own words, or mojibake in another locale)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from edgespec.cli import main
from edgespec.config import ConfigError, as_written
from edgespec.policies.semantic.head import load_head
from edgespec.sim.model.reject_table import load_reject_table
from tests.sim.helpers import tiny_scenario


def test_a_table_that_is_not_utf8_is_refused_at_the_field_naming_the_byte(
    tmp_path: Path,
) -> None:
    path = tmp_path / "head-acceptance.json"
    path.write_bytes(b'{"thresholds": "\xff"}')
    with pytest.raises(ConfigError) as error:
        load_reject_table(str(path))
    assert error.value.path == "verification.table"
    assert str(error.value) == (
        f"config field 'verification.table': {path}: not UTF-8 text (byte 0xff at offset 16)"
    )


def test_sim_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("s.yaml").write_text(yaml.safe_dump(tiny_scenario(duration_s=1.0)))
    Path("t.json").write_bytes(b"\xe9")
    table = "verification={rule: semantic, table: t.json}"
    assert main(["sim", "s.yaml", table, "--quiet", "--no-plots", "--out", "run"]) == 2
    assert capsys.readouterr().err == (
        "edgespec sim: config field 'verification.table': t.json: not UTF-8 text "
        "(byte 0xe9 at offset 0)\n"
    )


def test_a_table_that_is_not_json_is_still_refused_at_the_field(tmp_path: Path) -> None:
    path = tmp_path / "head-acceptance.json"
    path.write_text('{"thresholds": [')
    with pytest.raises(ConfigError) as error:
        load_reject_table(str(path))
    assert str(error.value) == (
        f"config field 'verification.table': {path}: Expecting value: line 1 column 17 (char 16)"
    )


def test_a_table_nested_past_the_recursion_limit_is_refused_at_the_field(tmp_path: Path) -> None:
    """json.loads raised RecursionError, a traceback (the decision head's loader too)."""
    path = tmp_path / "head-acceptance.json"
    path.write_text("[" * 200_000)
    with pytest.raises(ConfigError) as error:
        load_reject_table(str(path))
    assert str(error.value) == f"config field 'verification.table': {path}: nested too deeply"
    with pytest.raises(ValueError) as info:
        load_head(path)
    assert str(info.value) == f"{path} is not a decision head: nested too deeply"


def test_a_folder_or_device_is_named_as_such_not_as_missing(tmp_path: Path) -> None:
    """A folder was 'does not exist', like a name that matched nothing."""
    for path, problem in (
        (tmp_path, "is a directory, not a reject-share table"),
        (Path("/dev/zero"), "is not a regular file (a device, pipe or socket)"),
    ):
        with pytest.raises(ConfigError) as error:
            load_reject_table(str(path))
        assert str(error.value) == f"config field 'verification.table': {path}: {problem}"


def test_a_table_says_how_many_mismatches_its_shares_come_from(tmp_path: Path) -> None:
    """What a share's standard error needs (``edgespec reproduce wisv`` judges a sign of
    two shares only beyond it); a table without it still loads."""
    assert load_reject_table("gemma3-270m-kappa-critical").num_mismatches == 921
    table = {
        "thresholds": [0, 16],
        "channels": {"poor": {"quality": 0.2}, "good": {"quality": 0.8}},
        "reject_share": {"poor": [1.0, 0.0], "good": [1.0, 0.0]},
    }
    path = tmp_path / "head-acceptance.json"
    path.write_text(json.dumps(table))
    assert load_reject_table(str(path)).num_mismatches is None
    for bad in (0, "921", 9.5, True):
        path.write_text(json.dumps({**table, "mismatches": bad}))
        with pytest.raises(ConfigError) as error:
            load_reject_table(str(path))
        assert str(error.value) == (
            f"config field 'verification.table': {path}: mismatches must be a whole number "
            f">= 1, got {as_written(bad)}"
        )
