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


def test_every_reproduction_is_registered_in_one_shape() -> None:
    """``edgespec reproduce``'s choices are the registry's; each runs claims or a command."""
    from edgespec.reproduce.command import PAPERS, Reproduction

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    reproduce = sub.choices["reproduce"]
    group = next(a for a in reproduce._actions if isinstance(a, argparse._SubParsersAction))
    assert list(group.choices) == list(PAPERS)
    commands = {n for n, p in PAPERS.items() if p.command}
    assert commands == {"wisp-serving", "wisp-estimator", "dsd-real-pair", "wisv-heldout"}
    with pytest.raises(ValueError, match="either claims or a command of its own"):
        Reproduction("neither")


def test_wisv_without_the_heads_table_names_the_command_that_makes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import edgespec.sim.model.reject_table as semantic

    monkeypatch.setattr(semantic, "tables_dir", lambda: tmp_path / "wisv")
    out = tmp_path / "out"
    assert main(["reproduce", "wisv", "--quick", "--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("edgespec reproduce wisv: the decision head's reject shares are needed")
    assert (
        "/gemma3-270m-kappa-critical-acceptance.json does not exist; run `edgespec train wisv "
        "--budget kappa-critical` first" in err
    )
    assert not out.exists()  # stopped before writing anything


def test_user_input_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--target", "/nonexistent/model", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err == "edgespec serve: model path '/nonexistent/model' does not exist\n"


def test_ctrl_c_is_one_line_and_status_130(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from edgespec.datasets import length_tables

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(length_tables, "load_tokenizer", interrupted)
    try:
        status = main(["data", "lengths", "--out", str(tmp_path)])
    except KeyboardInterrupt:  # not caught: a traceback (and pytest would stop here)
        pytest.fail("main let KeyboardInterrupt through")
    assert status == 130
    assert capsys.readouterr() == ("", "edgespec data lengths: interrupted\n")


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
    assert capsys.readouterr().err == "edgespec bench sim: --repeat must be >= 1, got 0\n"


def test_unknown_arguments_show_the_subcommand_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "--target", "x", "stray"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: edgespec serve ")
    assert err.endswith("edgespec serve: error: unrecognized arguments: stray\n")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {name: p for sub in subs for name, p in sub.choices.items()}


def _options(command: str) -> dict[str, argparse.Action]:
    return {
        opt: a for a in _subparsers(build_parser())[command]._actions for opt in a.option_strings
    }


def _all_parsers() -> dict[str, argparse.ArgumentParser]:
    """Every ``edgespec`` subcommand and sub-choice (``train draft``, ...) and module CLI."""
    found: dict[str, argparse.ArgumentParser] = {}
    todo = [(f"edgespec {name}", p) for name, p in _subparsers(build_parser()).items()]
    while todo:
        name, parser = todo.pop()
        found[name] = parser
        todo += [(f"{name} {sub}", p) for sub, p in _subparsers(parser).items()]
    return found


PARSERS = _all_parsers()


def _arguments(command: str) -> dict[str, argparse.Action]:
    """The options (by their longest spelling) and positionals of ``command``, but --help."""
    return {
        max(a.option_strings, key=len) if a.option_strings else a.dest: a
        for a in PARSERS[command]._actions
        if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)
    }


def test_the_help_checks_cover_every_subcommand_and_no_module_has_its_own_cli() -> None:
    """Every tool is an ``edgespec`` subcommand: no module but the CLI builds a parser or
    runs as ``python -m``."""
    whats = ["draft", "feature-draft", "text-shards", "stop-predictor", "awc-data", "awc"]
    groups = {
        "bench": ["sim", "policy", "memory", "prefix", "serve"],
        "reproduce": [
            "wisp",
            "dsd",
            "zhu",
            "wisv",
            "wisp-serving",
            "wisp-estimator",
            "dsd-real-pair",
            "wisv-real-pair",
        ],
        "data": ["lengths"],
    }
    nested = [f"{group} {name}" for group, names in groups.items() for name in names]
    for name in [*SUBCOMMANDS, *(f"train {what}" for what in whats), *nested]:
        assert f"edgespec {name}" in PARSERS
    package = Path(__file__).resolve().parents[1] / "edgespec"
    with_parser = {
        ".".join(path.relative_to(package.parent).with_suffix("").parts)
        for path in package.rglob("*.py")
        if "def build_parser(" in path.read_text()
    }
    assert with_parser == {"edgespec.cli"}
    mains = sorted(
        str(path.relative_to(package.parent))
        for path in package.rglob("*.py")
        if 'if __name__ == "__main__":' in path.read_text() and path.name != "cli.py"
    )
    assert mains == []


@pytest.mark.parametrize("command", sorted(PARSERS))
def test_every_option_has_help(command: str) -> None:
    missing = sorted(opt for opt, action in _arguments(command).items() if not action.help)
    assert not missing, f"{command}: options without help: {missing}"


@pytest.mark.parametrize("command", sorted(PARSERS))
def test_every_option_with_a_default_states_it(command: str) -> None:
    unstated = sorted(
        opt
        for opt, action in _arguments(command).items()
        if not (action.default is None or action.default is False)
        and action.default not in ([], argparse.SUPPRESS)
        and "default" not in str(action.help).lower()
    )
    assert not unstated, f"{command}: options whose help does not state their default: {unstated}"


def test_serve_help_states_the_listening_and_tls_defaults() -> None:
    serve = _options("serve")
    assert "default: --config's host, else 127.0.0.1" in str(serve["--host"].help)
    assert "default 50051; 0 picks a free one" in str(serve["--port"].help)
    assert "needs --tls-key (default: no TLS, plaintext)" in str(serve["--tls-cert"].help)
    assert "private key file of --tls-cert (give both or neither)" in str(serve["--tls-key"].help)
    assert "on --host" in str(serve["--prometheus-port"].help)
    assert "default: plaintext" in str(_options("draft")["--tls-ca"].help)


def test_every_console_prints_text_as_it_is() -> None:
    """A rich Console parses ``[...]`` as markup by default: ``edgespec sim`` printed the run
    folder ``runs/[x]`` as ``runs/``. Paths, names and prompts are the user's: every Console
    the package makes takes ``markup=False`` (a style is passed as ``style=``)."""
    import re

    package = Path(__file__).resolve().parents[1] / "edgespec"
    calls = [
        (str(path.relative_to(package.parent)), call)
        for path in sorted(package.rglob("*.py"))
        for call, probe in re.findall(r"\bConsole\((.*?)\)(\.width)?", path.read_text())
        if not probe  # a Console asked for the terminal's width prints nothing
    ]
    assert len(calls) >= 15
    assert [c for c in calls if "markup=False" not in c[1]] == []


def test_the_program_freezes_its_heap_as_it_ends_and_main_does_not(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ``edgespec`` program (pyproject's script, ``python -m edgespec.cli``) is
    :func:`console_main`: the command's status, the heap frozen after it (a second of the
    interpreter's exit collections after torch loads, measured: serve's exit 1.3 s -> 0.2 s);
    :func:`main`, which tests and embedding programs call, leaves the collector alone."""
    import tomllib

    import edgespec.cli as cli

    frozen: list[int] = []
    monkeypatch.setattr("gc.freeze", lambda: frozen.append(1))
    assert cli.main([]) == 0 and frozen == []
    assert cli.console_main([]) == 0 and frozen == [1]
    capsys.readouterr()
    with Path("pyproject.toml").open("rb") as file:
        scripts = tomllib.load(file)["project"]["scripts"]
    assert scripts == {"edgespec": "edgespec.cli:console_main"}
    source = Path(cli.__file__).read_text()
    assert source.endswith('if __name__ == "__main__":\n    sys.exit(console_main())\n')
