"""``edgespec serve``: which flags reach the server it would start (``_serve`` replaced by
a recorder, so no model loads, that returns as if Ctrl-C stopped it: exit 130), their
precedence over ``--set``, and the exact message and exit code of each flag mistake."""

from __future__ import annotations

import dataclasses
import signal
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.config import ConfigError
from edgespec.policies.batching import DecodesFirstBatching
from edgespec.policies.window import StaticWindow
from edgespec.runtime.commands import serve as serve_command
from edgespec.runtime.commands.serve import fused_rounds_label
from edgespec.runtime.commands.serve_arguments import parse_slo_class
from edgespec.runtime.server.config import ServerConfig

STOPPED = 130
"""The exit status of a served run stopped by Ctrl-C."""


@dataclasses.dataclass
class Served:
    """What ``run`` handed to ``_serve`` (``threads``: to ``apply_cpus_and_threads``)."""

    config: Any = None
    policy: Any = None
    draft: str | None = None
    threads: int | None = None
    window: Any = None
    round_log: Any = None
    verbose: bool = False
    choice: Any = None
    calls: int = 0


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Served:
    seen = Served()

    async def record(
        config: Any,
        policy: Any,
        draft_name: str | None,
        window: Any = None,
        round_log: Any = None,
        verbose: bool = False,
        choice: Any = None,
    ) -> int:
        seen.config, seen.policy, seen.draft = config, policy, draft_name
        seen.window, seen.round_log, seen.verbose = window, round_log, verbose
        seen.choice = choice
        seen.calls += 1
        return signal.SIGINT  # served until Ctrl-C

    def applied(cpus: tuple[int, ...] | None, threads: int | None) -> None:
        seen.threads = threads  # and this process's torch threads left alone

    monkeypatch.setattr(serve_command, "_serve", record)
    monkeypatch.setattr(serve_command, "apply_cpus_and_threads", applied)
    return seen


def test_every_flag_reaches_the_server(served: Served, tmp_path: Path) -> None:
    log = tmp_path / "rounds.jsonl"
    args = ["serve", "--target", "m", "--host", "0.0.0.0", "--port", "7001"]
    args += ["--prometheus-port", "9100", "--auth-token", "a", "--auth-token", "b"]
    args += ["--deadline-rule", "token_speed", "--no-prefix-cache", "--threads", "3"]
    args += ["--draft", "ngram", "--window", "static", "--window-params", '{"gamma": 2}']
    args += ["--round-log", str(log), "--slo-class", "gold=null", "--slo-class", "silver=4"]
    args += ["--verbose"]
    assert main(args) == STOPPED
    assert served.calls == 1 and served.verbose
    c = served.config
    assert (c.target, c.host, c.port, c.prometheus_port) == ("m", "0.0.0.0", 7001, 9100)
    assert c.auth_tokens == ("a", "b")
    assert (c.deadline_rule, c.prefix_cache) == ("token_speed", False)
    assert dict(c.slo_classes) == {"gold": None, "silver": 4.0}
    assert (served.draft, served.threads) == ("ngram", 3)
    assert served.window == StaticWindow(2)
    assert type(served.policy) is DecodesFirstBatching  # the server's default
    assert served.round_log.path == log
    assert served.round_log._file.closed  # closed once the server stops
    assert log.read_text() == ""
    assert served.choice.name == "transformers" and served.choice.llama is None


def test_defaults_without_flags(served: Served) -> None:
    assert main(["serve", "--target", "m"]) == STOPPED
    c = served.config
    assert (c.host, c.port, c.prometheus_port, c.auth_tokens) == ("127.0.0.1", 50051, None, ())
    assert (c.deadline_rule, c.prefix_cache, c.batching.name) == ("pace", True, "decodes-first")
    assert dict(c.slo_classes) == {}
    assert (served.draft, served.threads, served.window, served.round_log) == (
        None,
        None,
        None,
        None,
    )
    assert not served.verbose


def test_flags_win_over_set_and_config(served: Served, tmp_path: Path) -> None:
    config = tmp_path / "server.yaml"
    config.write_text("target: from-file\nport: 6000\nhost: 10.0.0.1\nmax_batch_size: 3\n")
    args = ["serve", "--config", str(config), "--set", "port=6001", "--set", "max_batch_size=5"]
    assert main(args) == STOPPED
    c = served.config
    assert (c.target, c.port, c.host, c.max_batch_size) == ("from-file", 6001, "10.0.0.1", 5)
    assert main([*args, "--port", "6002", "--target", "flag"]) == STOPPED
    assert (served.config.target, served.config.port) == ("flag", 6002)


def test_the_round_log_is_closed_when_the_server_fails(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    logs: list[Any] = []

    async def fail(*args: Any, **kwargs: Any) -> None:
        logs.append(kwargs.get("round_log", args[5] if len(args) > 5 else None))
        raise RuntimeError("bind failed")

    monkeypatch.setattr(serve_command, "_serve", fail)
    log = tmp_path / "rounds.jsonl"
    with pytest.raises(RuntimeError, match="bind failed"):
        main(["serve", "--target", "m", "--round-log", str(log)])
    assert len(logs) == 1 and logs[0]._file.closed


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--guard-ms", "3"],
            "config field 'batching.name': --profile and --guard-ms configure the wisp "
            "batching policy; batching is 'decodes-first' (add --batching wisp)",
        ),
        (
            ["--batching", "lab", "--guard-ms", "3"],
            "--batching: --profile and --guard-ms configure the wisp "
            "batching policy; batching is 'lab' (add --batching wisp)",
        ),
        (  # was "--tls-cert: tls_cert and tls_key must be given together": config fields
            ["--tls-cert", "cert.pem"],
            "--tls-cert: needs --tls-key too (TLS serves a certificate with its private key)",
        ),
        (  # was "config field 'tls_cert': ...", a field the user never gave
            ["--tls-key", "key.pem"],
            "--tls-key: needs --tls-cert too (TLS serves a certificate with its private key)",
        ),
        (
            ["--slo-class", "a.b=3"],
            "config field 'slo_classes': --slo-class expects NAME=TOKENS_PER_S (a number, or "
            "none; no '.' in the name), got 'a.b=3'",
        ),
        (["--window-params", "{}"], "--window-params needs --window NAME"),
        (["--round-log", ""], "--round-log needs a file name, got ''"),
        (
            ["--window", "static", "--window-params", "3"],
            "--window-params must be a JSON object, got 3",
        ),
        (  # was "needs fused_rounds cloud_only (--fused-rounds cloud_only)": field and flag
            ["--draft", "ngram", "--cloud-only-draft-pass"],
            "--cloud-only-draft-pass: needs --fused-rounds cloud_only, got colocated",
        ),
        (  # was "must differ from port": the field's name, not its flag
            ["--prometheus-port", "50051"],
            "--prometheus-port: must differ from --port (the gRPC server's), got 50051",
        ),
        (  # was served, never used: deadlines come only from a class's target
            ["--deadline-rule", "token_speed", "--slo-class", "best=none"],
            "--deadline-rule: token_speed: no class has a token-speed target to set deadlines "
            "from (none: no deadline); give --slo-class NAME=TOKENS_PER_S",
        ),
        (
            ["--fused-rounds", "cloud_only", "--cloud-only-draft-pass"],
            "--cloud-only-draft-pass runs one co-located "
            "draft pass per fused round: it needs --draft MODEL (or --draft ngram)",
        ),
    ],
)
def test_flag_mistakes_exit_2_before_serving(
    served: Served, flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--target", "never-loaded", *flags]) == 2
    assert capsys.readouterr().err.strip() == f"edgespec serve: {message}"
    assert served.calls == 0


def test_a_tls_half_in_a_config_file_is_named_by_its_field(
    served: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file's field keeps the config's names; a flag's the flags' (not mixed)."""
    config = tmp_path / "server.yaml"
    config.write_text("target: m\ntls_key: key.pem\n")
    why = "(TLS serves a certificate with its private key)"
    assert main(["serve", "--config", str(config)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"edgespec serve: {config}:2: config field 'tls_key': needs tls_cert too {why}"
    assert main(["serve", "--target", "m", "--set", "tls_cert=c.pem"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"edgespec serve: config field 'tls_cert': needs tls_key too {why}"
    assert served.calls == 0


def test_a_wisp_guard_reaches_the_policy_in_seconds(served: Served) -> None:
    args = ["serve", "--target", "m", "--batching", "wisp", "--profile", "a100-qwen3-32b"]
    assert main([*args, "--guard-ms", "40"]) == STOPPED
    assert served.config.batching.params["guard_s"] == 0.04
    assert served.policy.guard_s == 0.04


def test_slo_class_none_and_null_are_no_target() -> None:
    assert parse_slo_class("be=null") == ("be", None)
    assert parse_slo_class("be=NULL") == ("be", None)
    assert parse_slo_class("be=NONE") == ("be", None)
    assert parse_slo_class("g=1e2") == ("g", 100.0)
    for bad in ("gold", "=3", "gold=", "gold=x"):
        with pytest.raises(ConfigError) as info:
            parse_slo_class(bad)
        assert info.value.path == "slo_classes"


def test_fused_rounds_flags_reach_the_config(served: Served) -> None:
    assert main(["serve", "--target", "m", "--fused-rounds", "cloud_only"]) == STOPPED
    c = served.config
    assert (c.fused_rounds, c.cloud_only_draft_pass, served.draft) == ("cloud_only", False, None)
    args = ["serve", "--target", "m", "--fused-rounds", "cloud_only", "--draft", "ngram"]
    assert main([*args, "--cloud-only-draft-pass"]) == STOPPED
    c = served.config
    assert (c.fused_rounds, c.cloud_only_draft_pass, served.draft) == ("cloud_only", True, "ngram")
    assert main(["serve", "--target", "m", "--set", "fused_rounds=cloud_only"]) == STOPPED
    assert served.config.fused_rounds == "cloud_only"
    assert main(["serve", "--target", "m"]) == STOPPED
    assert (served.config.fused_rounds, served.config.cloud_only_draft_pass) == (
        "colocated",
        False,
    )


def test_an_unknown_fused_rounds_value_is_refused(
    served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["serve", "--target", "m", "--fused-rounds", "cloud"])
    assert info.value.code == 2
    err = capsys.readouterr().err.splitlines()[-1]
    # argparse quotes the choices since Python 3.12.8
    assert err.replace("'colocated'", "colocated").replace("'cloud_only'", "cloud_only") == (
        "edgespec serve: error: argument --fused-rounds: invalid choice: 'cloud' (choose "
        "from colocated, cloud_only)"
    )
    assert main(["serve", "--target", "m", "--set", "fused_rounds=cloud"]) == 2
    assert capsys.readouterr().err.strip() == (
        "edgespec serve: config field 'fused_rounds': must be one of ['colocated', "
        "'cloud_only'], got 'cloud'"
    )
    assert served.calls == 0


def test_the_listening_line_names_cloud_only_rounds() -> None:
    def config(**kw: Any) -> ServerConfig:
        return ServerConfig(**kw)

    assert fused_rounds_label(config(), None) == ""
    cloud = config(fused_rounds="cloud_only")
    assert fused_rounds_label(cloud, None) == ", cloud-only fused rounds"
    paid = config(fused_rounds="cloud_only", cloud_only_draft_pass=True)
    assert fused_rounds_label(paid, StaticWindow(2)) == (
        ", cloud-only fused rounds with a co-located draft pass, fused-run window "
        "StaticWindow(gamma=2, fused=False)"
    )


def test_cloud_only_rounds_without_their_pass_load_no_draft(
    served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["serve", "--target", "m", "--fused-rounds", "cloud_only", "--draft", "x"]) == STOPPED
    )
    assert served.draft is None
    assert capsys.readouterr().err.strip() == (
        "edgespec serve: --draft x is not loaded: cloud-only fused rounds without "
        "--cloud-only-draft-pass\nedgespec serve: interrupted"
    )
    assert main(["serve", "--target", "m", "--draft", "x"]) == STOPPED
    assert served.draft == "x" and capsys.readouterr().err == "edgespec serve: interrupted\n"
