"""The server's batching is validated in one place
(edgespec.runtime.server.batching.build_batching): a config takes any spec, the validator
names the field, and `edgespec serve` says exactly what the validator says."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.cli import main
from edgespec.config import ConfigError, PolicySpec, from_dict
from edgespec.policies.registry import BATCHING
from edgespec.runtime.server import batching
from edgespec.runtime.server.batching import build_batching
from edgespec.runtime.server.config import ServerConfig

CASES = [
    (
        {"name": "edf"},
        ["--batching", "edf"],
        f"config field 'batching.name': unknown batching policy 'edf'; known: {sorted(BATCHING)}",
    ),
    (
        {"name": "wsip"},
        ["--batching", "wsip"],
        "config field 'batching.name': unknown batching policy 'wsip'; known: "
        f"{sorted(BATCHING)} (did you mean 'wisp'?)",
    ),
    (
        {"name": "wisp"},
        ["--batching", "wisp"],
        "config field 'batching.params.profile': wisp batching needs Eq. 19 coefficients: "
        "give a kind: wisp profile (--profile FILE_OR_NAME, i.e. batching.params.profile) "
        "or a_s, b_compute_s, b_read_s and c_s",
    ),
    (
        {"name": "lab", "params": {"guard_s": 0.003}},
        ["--batching", "lab", "--guard-ms", "3"],
        "config field 'batching.name': --profile and --guard-ms configure the wisp batching "
        "policy; batching is 'lab' (add --batching wisp)",
    ),
    (
        {"name": "decodes-first", "params": {"profile": "a100-qwen3-32b"}},
        ["--profile", "a100-qwen3-32b"],
        "config field 'batching.name': --profile and --guard-ms configure the wisp batching "
        "policy; batching is 'decodes-first' (add --batching wisp)",
    ),
    (
        {"name": "lab", "params": {"ratio": 2}},
        ["--set", "batching.params.ratio=2", "--batching", "lab"],
        "config field 'batching.params': batching policy 'lab' has no parameter(s) ['ratio']; "
        "known: ['max_length_ratio']",
    ),
]


@pytest.mark.parametrize(("spec", "flags", "message"), CASES)
def test_the_validator_names_the_field(
    spec: dict[str, Any], flags: list[str], message: str
) -> None:
    config = from_dict(ServerConfig, {"batching": spec})  # the config itself takes it
    with pytest.raises(ConfigError) as error:
        build_batching(config.batching)
    assert str(error.value) == message


@pytest.mark.parametrize(("spec", "flags", "message"), CASES)
def test_serve_says_what_the_validator_says(
    spec: dict[str, Any], flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An error at the field --batching set names the flag instead of the field."""
    if "--batching" in flags:
        message = message.replace("config field 'batching.name':", "--batching:")
    assert main(["serve", "--target", "never-loaded", *flags]) == 2
    assert capsys.readouterr().err.strip() == f"edgespec serve: {message}"


def test_serve_validates_batching_nowhere_else(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With the validator replaced, no other check stops a bad --batching first: the
    replacement's error is the one serve reports, and it saw the flags' spec."""
    seen: list[PolicySpec] = []

    def only(spec: PolicySpec) -> Any:
        seen.append(spec)
        raise ConfigError("batching", "the one validator ran")

    monkeypatch.setattr(batching, "build_batching", only)
    assert main(["serve", "--target", "never-loaded", "--batching", "edf", "--guard-ms", "3"]) == 2
    assert capsys.readouterr().err.strip() == (
        "edgespec serve: config field 'batching': the one validator ran"
    )
    assert [(s.name, dict(s.params)) for s in seen] == [("edf", {"guard_s": 0.003})]
