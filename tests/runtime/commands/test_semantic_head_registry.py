"""``edgespec serve --semantic-head`` takes its head by name through the policy registry
(kind ``head``, name ``wisv``, the file as its ``path``), as the WISV rollout does; a file
that is not a head is an error at the ``semantic_head`` field itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.config import ConfigError
from edgespec.policies.registry import HEAD
from edgespec.policies.semantic.head import DecisionHead, head_policy
from edgespec.runtime.commands.serve_service import semantic_head
from tests.runtime.commands.test_semantic_head_pair import _config, _head


def test_the_head_comes_from_the_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _head(tmp_path, {"target": "no-such-model"})
    asked: list[str] = []

    def wisv(path: str) -> DecisionHead:
        asked.append(path)
        return head_policy(path)

    monkeypatch.setitem(HEAD, "wisv", wisv)
    head = semantic_head(_config("no-such-model", path))
    assert asked == [str(path)] and isinstance(head, DecisionHead)


def test_a_file_that_is_no_head_is_an_error_at_the_field(tmp_path: Path) -> None:
    path = _head(tmp_path, None)
    path.write_text("[]")
    with pytest.raises(ConfigError) as caught:
        semantic_head(_config("no-such-model", path))
    assert caught.value.path == "semantic_head"
    assert str(caught.value) == (
        f"config field 'semantic_head': head policy 'wisv': {path} is not a decision head: "
        "expected a JSON object, got list"
    )
