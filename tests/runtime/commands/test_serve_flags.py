"""``edgespec serve`` flags for SLO-aware serving: --batching (any registered policy),
--profile, --guard-ms, --deadline-rule, --slo-class, --no-prefix-cache; their errors and a
real server started with them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import build_parser, main
from edgespec.config import ConfigError, load_config
from edgespec.policies.registry import BATCHING
from edgespec.policies.wisp import WispBatching
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.commands.serve import _overrides
from edgespec.runtime.commands.serve_arguments import parse_slo_class
from edgespec.runtime.server.batching import build_batching
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.commands.draft_stages import split_stages
from tests.runtime.commands.processes import Command

PROMPT = (5, 6, 7, 8, 9)


def _config(*flags: str) -> ServerConfig:
    args = build_parser().parse_args(["serve", *flags])
    return load_config(ServerConfig, None, _overrides(args))


def test_flags_reach_the_config_and_the_policy() -> None:
    config = _config(
        "--batching",
        "wisp",
        "--profile",
        "a100-qwen3-32b",
        "--guard-ms",
        "2.5",
        "--deadline-rule",
        "token_speed",
        "--slo-class",
        "gold=20",
        "--slo-class",
        "best_effort=none",
        "--no-prefix-cache",
    )
    assert config.batching.name == "wisp"
    assert dict(config.batching.params) == {"profile": "a100-qwen3-32b", "guard_s": 0.0025}
    assert dict(config.slo_classes) == {"gold": 20.0, "best_effort": None}
    assert (config.deadline_rule, config.prefix_cache) == ("token_speed", False)
    policy = build_batching(config.batching)
    assert isinstance(policy, WispBatching)
    e = policy.estimator  # WISP Table 12, the bundled a100-qwen3-32b profile
    assert (e.a_s, e.b_compute_s, e.b_read_s, e.c_s) == (3.314e-05, 3.450e-08, 4.620e-06, 1.486e-02)
    assert policy.guard_s == 0.0025
    defaults = _config()
    assert (defaults.deadline_rule, defaults.prefix_cache, defaults.batching.name) == (
        "pace",
        True,
        "decodes-first",
    )


@pytest.mark.parametrize("name", sorted(BATCHING))
def test_every_registered_batching_policy_is_accepted(name: str) -> None:
    flags = ["--profile", "a100-qwen3-32b"] if name == "wisp" else []
    config = _config("--batching", name, *flags)
    policy = build_batching(config.batching)
    assert config.batching.name == name
    assert type(policy).__name__ == {
        "fcfs": "FcfsBatching",
        "lab": "LengthAwareBatching",
        "wisp": "WispBatching",
    }.get(name, type(policy).__name__)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--batching", "wisp"],
            "config field 'batching.params.profile': wisp batching needs Eq. 19 coefficients: "
            "give a kind: wisp profile (--profile FILE_OR_NAME, i.e. batching.params.profile) "
            "or a_s, b_compute_s, b_read_s and c_s",
        ),
        (
            ["--batching", "wisp", "--profile", "rtx4500-llama2-7b-zhu"],
            "--profile: 'rtx4500-llama2-7b-zhu' is not a 'wisp' profile",
        ),
        (
            ["--profile", "a100-qwen3-32b"],
            "config field 'batching.name': --profile and --guard-ms configure the wisp "
            "batching policy; batching is 'decodes-first' (add --batching wisp)",
        ),
        (
            ["--batching", "edf"],
            f"--batching: unknown batching policy 'edf'; known: {sorted(BATCHING)}",
        ),
        (
            ["--slo-class", "gold"],
            "config field 'slo_classes': --slo-class expects NAME=TOKENS_PER_S (a number, or "
            "none; no '.' in the name), got 'gold'",
        ),
        (
            ["--slo-class", "gold=0"],
            "--slo-class gold: must be a finite number > 0 or null, got 0.0",
        ),
        (  # the last one won without a word (sim and bench refused it)
            ["--set", "max_batch_size=0", "--set", "max_batch_size=8"],
            "override 'max_batch_size=8': max_batch_size is given twice (first as "
            "'max_batch_size=0'); give it once",
        ),
    ],
)
def test_serve_flag_errors(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--target", "never-loaded", *flags]) == 2
    assert capsys.readouterr().err.strip() == f"edgespec serve: {message}"


def test_missing_profile_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.yaml"
    args = ["serve", "--target", "x", "--batching", "wisp", "--profile", str(missing)]
    assert main(args) == 2
    assert capsys.readouterr().err.strip() == (
        f"edgespec serve: --profile: {missing}: file not found"
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("kind: wisp\n", "{file}.a_s: required field is missing"),
        ("kind: wisp\nalpha: 1\n", "{file}.alpha: unknown field; known: ['a_s', 'b_compute_s', "
         "'b_read_s', 'c_s']"),
        ("", "{file}: the file is empty; a profile gives its kind and coefficients"),
        ("kind: wisp\na_s: -1\nb_compute_s: 0\nb_read_s: 0\nc_s: 0\n",
         "{file}.a_s: must be finite and >= 0, got -1.0"),
        ("kind: wisp\nrole: drafter\n", "{file}.role: must be 'target' or 'draft', got 'drafter'"),
    ],
)  # fmt: skip
def test_a_bad_field_of_a_profile_file_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, problem: str
) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text(text)
    args = ["serve", "--target", "x", "--batching", "wisp", "--profile", str(profile)]
    assert main(args) == 2
    assert capsys.readouterr().err.strip() == (
        "edgespec serve: --profile: " + problem.format(file=profile)
    )


def test_parse_slo_class() -> None:
    assert parse_slo_class("gold=12.5") == ("gold", 12.5)
    assert parse_slo_class(" be = None ") == ("be", None)
    for bad in ("=3", "a.b=3", "gold=fast"):
        with pytest.raises(ConfigError, match="--slo-class expects NAME=TOKENS_PER_S"):
            parse_slo_class(bad)


def test_served_with_wisp_slo_classes_and_no_prefix_cache(
    tmp_path: Path,
    target_model: Any,
    target: TransformersTarget,
    capsys: pytest.CaptureFixture[str],
) -> None:
    model_dir = tmp_path / "model"
    target_model.save_pretrained(model_dir)
    flags = ["serve", "--target", str(model_dir), "--port", "0", "--threads", "1"]
    flags += ["--batching", "wisp", "--profile", "a100-qwen3-32b", "--guard-ms", "1"]
    flags += ["--deadline-rule", "token_speed", "--slo-class", "gold=50", "--no-prefix-cache"]
    server = Command(flags, tmp_path / "stderr", env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        line = server.wait_for("listening on", stdout=True).string
        assert "batching wisp, no prefix cache" in line, line
        address = line.split("listening on ")[1].split()[0]
        ids = ",".join(map(str, PROMPT))
        args = ["draft", "--server", address, "--draft", "ngram", "--prompt-ids", ids]
        assert main([*args, "--max-new-tokens", "10", "--set", "slo_class=gold"]) == 0
        out = capsys.readouterr().out
        streamed = [
            int(t) for t in out.replace("[", " ").replace("]", " ").replace(",", " ").split()
        ]
        assert streamed == list(target_greedy_decode(target, PROMPT, 10))
        assert main([*args, "--set", "slo_class=silver"]) == 1  # not a configured class
        _, err = split_stages(capsys.readouterr().err)
        assert err == [
            "edgespec draft: INVALID_ARGUMENT: unknown slo_class 'silver'; this server has ['gold']"
        ]
        stats = RemoteVerifier(address).stats()
        assert stats.num_cache_hits == 0 and stats.num_cache_misses > 0
    finally:
        server.kill()


def test_device_and_dtype_flags_override_the_config_file(tmp_path: Path) -> None:
    path = tmp_path / "server.yaml"
    path.write_text("device: cuda:1\ndtype: float16\n")

    def placement(*flags: str) -> tuple[str, str | None]:
        args = build_parser().parse_args(["serve", "--config", str(path), *flags])
        config = load_config(ServerConfig, str(path), _overrides(args))
        return config.device, config.dtype

    assert placement() == ("cuda:1", "float16")
    assert placement("--device", "cpu") == ("cpu", "float16")
    assert placement("--dtype", "bfloat16") == ("cuda:1", "bfloat16")
    assert (_config().device, _config().dtype) == ("cpu", None)


def test_the_listening_line_names_a_device_or_dtype_other_than_the_cpus_float32() -> None:
    from edgespec.arguments import DevicePlacement
    from edgespec.runtime.commands.serve import backend_label
    from edgespec.runtime.commands.serve_target import TargetChoice

    plain = TargetChoice("transformers")
    assert backend_label(plain, DevicePlacement()) == ""
    assert backend_label(plain, DevicePlacement("cuda:1", "bfloat16")) == " on cuda:1, bfloat16"
    assert backend_label(plain, DevicePlacement("cpu", "bfloat16")) == " on cpu, bfloat16"


class _Stopped(Exception):
    """Raised in place of the target's load: what was said before it is the test."""


def _stop(*args: object, **kwargs: object) -> None:
    raise _Stopped


def test_a_first_load_says_it_converts_the_gguf_with_no_unmeasured_duration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Said "about a minute", measured nowhere (README: 25 s converting, 2-core machine)."""
    from edgespec.models import gemma_cache, loading
    from edgespec.runtime.commands.serve_target import TargetChoice, load_target

    monkeypatch.setattr(gemma_cache, "needs_conversion", lambda name: True)
    monkeypatch.setattr(loading, "load_model", _stop)
    said: list[str] = []
    config = ServerConfig(target="gemma3-270m")
    with pytest.raises(_Stopped):
        load_target(TargetChoice("transformers"), config, False, said.append)
    assert said == [
        "loading the target gemma3-270m (first load: dequantizing its GGUF once into a cached "
        "fp32 copy)"
    ]
