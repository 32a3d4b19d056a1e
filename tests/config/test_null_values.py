"""A config value given as YAML's ``null`` (or a field left empty) is quoted as ``null``, as
the user wrote it, not as Python's ``None (NoneType)``; other values keep their type."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

from edgespec.cli import main
from edgespec.config import ConfigError, from_dict


@dataclass(frozen=True, slots=True)
class _Config:
    seed: int = 0
    kind: Literal["a", "b"] = "a"
    pair: tuple[int, int] = (1, 2)
    choice: int | str = 1


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"seed": None}, "config field 'seed': expected an integer, got null"),
        ({"kind": None}, "config field 'kind': must be one of ['a', 'b'], got null"),
        ({"pair": None}, "config field 'pair': expected a list, got null"),
        ({"choice": None}, "config field 'choice': null matches none of int | str"),
        ({"seed": "3"}, "config field 'seed': expected an integer, got '3' (str)"),
    ],
)
def test_null_is_quoted_as_yaml_writes_it(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        from_dict(_Config, data)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("override", "line"),
    [
        ("seed=null", "config field 'seed': expected an integer, got null"),
        ("seed=", "config field 'seed': expected an integer, got '' (str)"),
        ("system=null", "config field 'system': unknown system null; known: "
         "['fleet', 'drafting_server']"),
    ],
)  # fmt: skip
def test_the_command_says_null(
    override: str, line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sim", override, "--quiet", "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == f"edgespec sim: {line}"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"seed": True}, "config field 'seed': expected an integer, got true"),
        ({"seed": False}, "config field 'seed': expected an integer, got false"),
        ({"kind": True}, "config field 'kind': must be one of ['a', 'b'], got true"),
        ({"pair": False}, "config field 'pair': expected a list, got false"),
        ({"choice": True}, "config field 'choice': true matches none of int | str"),
        ({"seed": 2.5}, "config field 'seed': expected an integer, got 2.5 (float)"),
    ],
)
def test_true_and_false_are_quoted_as_yaml_writes_them(
    data: dict[str, object], message: str
) -> None:
    """``true``/``false`` read as YAML wrote them, as ``null`` is, not ``True (bool)``."""
    with pytest.raises(ConfigError) as caught:
        from_dict(_Config, data)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("field", "value", "yaml"),
    [("temperature", True, "true"), ("max_new_tokens", None, "null"), ("draft", False, "false")],
)
def test_the_edge_drafters_config_says_yaml_words(field: str, value: object, yaml: str) -> None:
    """``edgespec draft --config``'s fields (read by this same code) say them alike."""
    from edgespec.runtime.edge.config import DrafterConfig

    with pytest.raises(ConfigError) as caught:
        from_dict(DrafterConfig, {field: value})
    assert str(caught.value).endswith(f", got {yaml}")


@pytest.mark.parametrize(
    ("override", "line"),
    [
        ("policies.window.params.gamma=null", "parameter 'gamma' expects an integer, got null"),
        ("policies.window.params.gamma=true", "parameter 'gamma' expects an integer, got true"),
    ],
)
def test_a_policy_parameter_says_yaml_words(
    override: str, line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A policy's parameter given ``null`` or ``true`` (the simulator's scenario, the
    runtime's config alike: edgespec.policies.registry) is named as written."""
    assert main(["sim", override, "--quiet", "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip().endswith(line)
