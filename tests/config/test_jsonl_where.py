"""A JSONL error names its file by the path as given (``runs/a/trace.jsonl:2``), not made
absolute: it named only the base name (``trace.jsonl:2``), so of two ``trace.jsonl`` in two
folders a user could not tell which was meant (the line-too-long error alone said the path)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.config import ConfigError, read_jsonl
from edgespec.sim.setup.workload import load_trace


def _refusal(path: str) -> str:
    with pytest.raises(ConfigError) as error:
        list(read_jsonl(path, "trace file"))
    return str(error.value)


def test_two_files_of_one_name_are_told_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for folder in ("runs/a", "runs/b"):
        Path(folder).mkdir(parents=True)
    Path("runs/a/trace.jsonl").write_text('{"a": 1}\n{"a": \n')
    Path("runs/b/trace.jsonl").write_text('{"a": 1}\n\n{"a": 1, "a": 2}\n')
    assert _refusal("runs/a/trace.jsonl") == "runs/a/trace.jsonl:2: invalid JSON: Expecting value"
    assert _refusal("runs/b/trace.jsonl") == (
        "runs/b/trace.jsonl:3: duplicate key 'a' in a JSON object"
    )
    records = read_jsonl(Path("runs/a/../b/trace.jsonl"), "trace file")
    assert next(records) == ("runs/a/../b/trace.jsonl:1", {"a": 1})  # as given, not resolved


def test_a_record_field_error_names_the_path_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Errors a reader raises at a record's ``where`` (here a trace's bad field)."""
    monkeypatch.chdir(tmp_path)
    for folder in ("a", "b"):
        Path(folder).mkdir()
        Path(folder, "t.jsonl").write_text(f'{{"arrival_ms": "{folder}"}}\n')
    for folder in ("a", "b"):
        with pytest.raises(ConfigError) as error:
            load_trace(f"{folder}/t.jsonl")
        assert str(error.value) == (
            f"{folder}/t.jsonl:1: arrival_ms: expected a finite number >= 0, got '{folder}'"
        )
