"""``edgespec serve --semantic-head``: a head that records another target than ``--target``
is refused (one line, exit 2, naming both), compared as the models the names resolve to;
a head recording none (a file written before heads recorded their pair) is served with a
one-line warning that it cannot be checked; a head for this target is served silently.
All before any model loads (the port is taken, so a run that got past the head stops
there, exit 2, instead of serving)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import build_parser, main
from edgespec.config import ConfigError, load_config
from edgespec.runtime.commands.serve import _overrides
from edgespec.runtime.commands.serve_service import semantic_head
from edgespec.runtime.server.config import ServerConfig
from tests.runtime.semantic_helpers import constant_head


def _head(tmp_path: Path, pair: dict[str, Any] | None) -> Path:
    path = tmp_path / "head.json"
    data = constant_head(-3.0).to_json()
    path.write_text(json.dumps(data if pair is None else {**data, "trained_for": pair}))
    return path


def _config(target: str, head: Path) -> ServerConfig:
    args = build_parser().parse_args(["serve", "--target", target, "--semantic-head", str(head)])
    return load_config(ServerConfig, None, _overrides(args))


def _serve(target: str, head: Path, port: int) -> list[str]:
    return ["serve", "--target", target, "--semantic-head", str(head), "--port", str(port)]


def test_a_head_for_another_target_is_refused(
    tmp_path: Path, listener: int, capsys: pytest.CaptureFixture[str]
) -> None:
    head = _head(tmp_path, {"target": "gemma3-270m", "draft": "gemma3-270m-draft"})
    assert main(_serve("no-such-model", head, listener)) == 2
    assert capsys.readouterr().err == (
        f"edgespec serve: --semantic-head: {head} was trained for target gemma3-270m, not "
        "the served target no-such-model: give a head trained for this target\n"
    )


def test_a_head_for_another_draft_than_the_servers_is_refused(
    tmp_path: Path, listener: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server's --draft drafts its fused rounds, whose hidden states the head judges:
    a head trained for another draft was served (only its target was compared)."""
    head = _head(tmp_path, {"target": "no-such-model", "draft": "gemma3-270m-draft"})
    argv = [*_serve("no-such-model", head, listener), "--draft", "other-draft"]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"edgespec serve: --semantic-head: {head} was trained for draft gemma3-270m-draft, not "
        "the server's --draft other-draft: its fused rounds would judge another draft's "
        "hidden states; give a head trained for this pair\n"
    )
    assert main([*_serve("no-such-model", head, listener), "--draft", "gemma3-270m-draft"]) == 2
    assert capsys.readouterr().err.endswith(f"port {listener} is in use (on 127.0.0.1)\n")


def test_a_head_without_the_record_is_served_with_one_warning(
    tmp_path: Path, listener: int, capsys: pytest.CaptureFixture[str]
) -> None:
    head = _head(tmp_path, None)
    assert main(_serve("no-such-model", head, listener)) == 2  # then: the port is taken
    assert capsys.readouterr().err == (
        f"edgespec serve: warning: --semantic-head {head} does not record the target it was "
        "trained for, so it cannot be checked against the target no-such-model\n"
        f"edgespec serve: port {listener} is in use (on 127.0.0.1)\n"
    )


def test_a_head_for_this_target_is_served_silently(
    tmp_path: Path, listener: int, capsys: pytest.CaptureFixture[str]
) -> None:
    head = _head(tmp_path, {"target": "no-such-model", "target_vocab_size": 64})
    assert main(_serve("no-such-model", head, listener)) == 2  # then: the port is taken
    assert capsys.readouterr().err == f"edgespec serve: port {listener} is in use (on 127.0.0.1)\n"


def test_one_model_however_spelled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The head records the folder's absolute path; ``--target ./target`` from its parent
    is that model (accepted, no warning); another folder is not (refused, naming both)."""
    for name in ("target", "other"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text("{}")
    head = _head(tmp_path, {"target": str(tmp_path / "target"), "draft": None})
    monkeypatch.chdir(tmp_path)
    warnings: list[str] = []
    loaded = semantic_head(_config("./target", head), warnings.append)
    assert loaded is not None and loaded.trained_for is not None and warnings == []
    with pytest.raises(ConfigError) as caught:
        semantic_head(_config("./other", head), warnings.append)
    assert caught.value.message == (
        f"{head} was trained for target {tmp_path / 'target'}, not the served target ./other: "
        "give a head trained for this target"
    )


@pytest.mark.parametrize("name", ["gemma3-270m-head.json", "gemma3-270m-kappa-critical-head.json"])
def test_a_bundled_head_is_known_by_its_content_wherever_it_is(tmp_path: Path, name: str) -> None:
    """The shipped heads predate the record (their hashes are named by the shipped tables
    and by measurements), so serving one printed the 'cannot be checked' warning on the
    documented path; the files shipped beside them say the pair: checked, no warning."""
    from edgespec.policies.semantic.bundled import bundled_dir

    copy = tmp_path / name
    copy.write_bytes((bundled_dir() / name).read_bytes())
    warnings: list[str] = []
    loaded = semantic_head(_config("gemma3-270m", copy), warnings.append)
    assert warnings == [] and loaded.trained_for is not None
    assert (loaded.trained_for.target, loaded.trained_for.draft) == (
        "gemma3-270m",
        "gemma3-270m-draft",
    )
    with pytest.raises(ConfigError) as info:
        semantic_head(_config("no-such-model", copy), warnings.append)
    assert str(info.value) == (
        f"config field 'semantic_head': {copy} was trained for target gemma3-270m, not "
        "the served target no-such-model: give a head trained for this target"
    )


def test_a_head_recording_another_target_vocabulary_is_refused(tmp_path: Path) -> None:
    """The recorded ``target_vocab_size`` was never compared with the loaded target's."""
    from edgespec.runtime.commands.serve_service import semantic_rules_for
    from edgespec.runtime.testing import tiny_llama

    head_file = _head(tmp_path, {"target": "m", "draft": None, "target_vocab_size": 262_144})
    config = _config("m", head_file)
    head = semantic_head(config)
    with pytest.raises(ConfigError) as info:
        semantic_rules_for(config, head, tiny_llama(), vocab_size=64)
    assert str(info.value) == (
        f"config field 'semantic_head': {head_file} was trained for a target of 262,144 "
        "tokens, the target has 64: give a head trained for this target"
    )
    assert sorted(semantic_rules_for(config, head, tiny_llama(), vocab_size=262_144)) == [
        "exact",
        "semantic",
    ]
