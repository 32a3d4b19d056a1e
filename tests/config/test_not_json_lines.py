"""A file that is not JSON Lines given where JSONL is read (every trace reader:
:func:`edgespec.config.read_jsonl`) is named for what it is when that is plain: one JSON
document over several lines (``trace --json``'s summary, a model's ``config.json``) or YAML
(a profile). Both were refused as a broken first line: ``sum.json:1: invalid JSON:
Expecting property name enclosed in double quotes``, ``p.yaml:1: invalid JSON: Expecting
value``. A JSONL file with a broken line keeps the line's own message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from edgespec.cli import main
from edgespec.config import ConfigError, files, read_jsonl
from tests.config.test_file_reading import QUIET, _reads
from tests.sim.helpers import tiny_scenario

NOT_JSONL = "not JSON Lines (one JSON object per line)"
SUMMARY = {"title": "speculative decoding", "gamma": 4, "max_new_tokens": 24, "summary": []}
SUMMARY_IS = (
    "a JSON document over several lines (an object with keys 'title', 'gamma', "
    f"'max_new_tokens', 'summary'), {NOT_JSONL}"
)
"""What ``sum.json`` is, after its ``PATH:1: ``."""
PROFILE = "# target m/llama (wisp), measured by `edgespec profile`\n# a_s = 4e-05\n\nkind: wisp\n"


def _refusal(path: Path) -> str:
    with pytest.raises(ConfigError) as error:
        list(read_jsonl(path, "trace file"))
    return str(error.value)


def test_a_json_document_over_several_lines_is_named_as_one(tmp_path: Path) -> None:
    summary = tmp_path / "sum.json"
    summary.write_text(json.dumps(SUMMARY, indent=2) + "\n")
    assert _refusal(summary) == f"{summary}:1: {SUMMARY_IS}"
    config = tmp_path / "config.json"
    config.write_text("\n" + json.dumps({f"k{i}": i for i in range(7)}, indent=1))
    assert _refusal(config) == (
        f"{config}:2: a JSON document over several lines (an object with keys 'k0', 'k1', "
        f"'k2', 'k3', 'k4' and 2 more), {NOT_JSONL}"
    )
    listed = tmp_path / "l.json"
    listed.write_text(json.dumps([{"a": 1}, {"a": 2}], indent=1))
    assert _refusal(listed) == (
        f"{listed}:1: a JSON document over several lines (a list of 2 items), {NOT_JSONL}"
    )


def test_a_yaml_file_is_named_as_yaml(tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text(PROFILE)
    assert _refusal(profile) == f"{profile}:1: YAML (lines of key: value), {NOT_JSONL}"
    plain = tmp_path / "s.yaml"
    plain.write_text("---\nworkload: {kind: trace}\n")
    assert _refusal(plain) == f"{plain}:1: YAML (lines of key: value), {NOT_JSONL}"


NO_NAME = "invalid JSON: Expecting property name enclosed in double quotes"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": 1,\n', f"1: {NO_NAME}"),
        ("# notes\nsome words\n", "1: invalid JSON: Expecting value"),
        ('{"a": 1}\n{\n "a": 2}\n', f"2: {NO_NAME}"),
    ],
)
def test_a_broken_jsonl_line_keeps_its_own_message(tmp_path: Path, text: str, message: str) -> None:
    """Broken first lines that are neither (``message``: after the file's ``PATH:``); a later
    line is never tried as a document."""
    path = tmp_path / "t.jsonl"
    path.write_text(text)
    assert _refusal(path) == f"{path}:{message}"


def test_a_document_is_tried_whole_only_up_to_the_line_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never read past one byte more than :data:`~edgespec.config.files.MAX_JSONL_LINE_BYTES`."""
    summary = tmp_path / "sum.json"
    summary.write_text(json.dumps(SUMMARY, indent=2) + "\n")
    size = summary.stat().st_size
    monkeypatch.setattr(files, "MAX_JSONL_LINE_BYTES", size)
    assert _refusal(summary) == f"{summary}:1: {SUMMARY_IS}"
    monkeypatch.setattr(files, "MAX_JSONL_LINE_BYTES", size - 1)
    reads = _reads(monkeypatch)
    assert _refusal(summary) == f"{summary}:1: {NO_NAME}"
    assert reads == [2, size]  # the first line, then the file at most limit + 1


def test_the_commands_that_read_traces_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("sum.json").write_text(json.dumps(SUMMARY, indent=2) + "\n")
    Path("p.yaml").write_text(PROFILE)
    argv = ["train", "stop-predictor", "--traces", "sum.json", "--out", "s.json"]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"edgespec train stop-predictor: --traces sum.json:1: {SUMMARY_IS}\n"
    )
    Path("k.yaml").write_text(yaml.safe_dump(tiny_scenario(duration_s=1.0)))
    argv = ["sim", "k.yaml", "acceptance={kind: trace, traces: [p.yaml]}", *QUIET, "--out", "r"]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        "edgespec sim: config field 'acceptance.traces[0]': p.yaml:1: YAML (lines of key: "
        f"value), {NOT_JSONL}\n"
    )
