from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import yaml

from edgespec.cli import SUBCOMMANDS, build_parser, main
from tests.sim.helpers import tiny_scenario


def test_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    for name in SUBCOMMANDS:
        assert name in out


@pytest.mark.parametrize("seed", ["zhu", "wisv"])
def test_seed_not_reproduced_yet_says_so_and_fails(
    seed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["reproduce", seed]) == 2
    assert capsys.readouterr().err == f"edgespec reproduce {seed}: not reproduced yet\n"


def test_user_input_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--target", "/nonexistent/model", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err == "edgespec serve: model path '/nonexistent/model' does not exist\n"


def test_overrides_after_an_option_are_still_overrides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(yaml.safe_dump(tiny_scenario(duration_s=2.0)))
    out = tmp_path / "run"
    args = ["sim", str(scenario), "seed=3", "--quiet", "--no-plots", "--out", str(out)]
    assert main([*args, "duration_s=1.5"]) == 0
    written = yaml.safe_load((out / "scenario.yaml").read_text())
    assert (written["seed"], written["duration_s"]) == (3, 1.5)
    assert main(["bench", "sim", "--repeat", "0", "duration_s=1"]) == 2
    assert capsys.readouterr().err == "edgespec bench: --repeat must be >= 1, got 0\n"


def test_unknown_arguments_show_the_subcommand_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "--target", "x", "stray"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: edgespec serve ")
    assert err.endswith("edgespec serve: error: unrecognized arguments: stray\n")


def _options(command: str) -> dict[str, argparse.Action]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {opt: a for a in sub.choices[command]._actions for opt in a.option_strings}


@pytest.mark.parametrize("command", ["serve", "draft", "sim"])
def test_every_option_of_the_serving_and_sim_commands_has_help(command: str) -> None:
    missing = sorted(opt for opt, action in _options(command).items() if not action.help)
    assert not missing, f"edgespec {command}: options without help: {missing}"


def test_serve_help_states_the_listening_and_tls_defaults() -> None:
    serve = _options("serve")
    assert "default: --config's host, else 127.0.0.1" in str(serve["--host"].help)
    assert "default 50051; 0 picks a free one" in str(serve["--port"].help)
    assert "needs --tls-key (default: no TLS, plaintext)" in str(serve["--tls-cert"].help)
    assert "private key file of --tls-cert (give both or neither)" in str(serve["--tls-key"].help)
    assert "on --host" in str(serve["--prometheus-port"].help)
    assert "default: plaintext" in str(_options("draft")["--tls-ca"].help)
