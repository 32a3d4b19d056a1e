"""``--device``/``--dtype`` (edgespec.arguments.add_device_arguments): the flags every
command that loads a model takes, their defaults (float32 on the CPU, bfloat16 on a GPU)
and the error when the GPU asked for is not there, before any weight loads."""

from __future__ import annotations

import argparse

import pytest

torch = pytest.importorskip("torch")

from edgespec.arguments import (  # noqa: E402
    DevicePlacement,
    add_device_arguments,
    default_dtype,
    device_name,
)
from edgespec.cli import main  # noqa: E402
from edgespec.errors import UserInputError  # noqa: E402
from edgespec.models.devices import check_device_available, device_placement  # noqa: E402

COMMANDS = [
    ["serve", "--target", "never-loaded"],
    ["draft", "--server", "127.0.0.1:1", "--prompt", "a"],
    ["drafting-server", "--server", "127.0.0.1:1", "--draft", "never-loaded"],
    ["trace", "--out", "never-written.jsonl"],
    ["profile", "--target", "never-loaded"],
    ["bench", "prefix"],
]


def _unavailable(device: str) -> str:
    return (
        f"--device {device}: CUDA is not available to this torch (torch {torch.__version__}, "
        "torch.cuda.is_available() is false: a CPU-only build, or no GPU or driver); use "
        "--device cpu, or install a CUDA build of torch (docs/DEPLOY.md, On a GPU server)"
    )


@pytest.fixture
def no_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="loader")
    add_device_arguments(parser)
    return parser


@pytest.mark.parametrize("text", ["cpu", "cuda", "cuda:0", "cuda:12"])
def test_device_names(text: str) -> None:
    assert device_name(text) == text


@pytest.mark.parametrize("text", ["gpu", "CUDA", "cuda:", "cuda:x", "cuda:-1", "cpu:0", ""])
def test_bad_device_names(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as info:
        device_name(text)
    assert str(info.value) == f"expected cpu, cuda or cuda:N (N a GPU index), got {text!r}"


@pytest.mark.parametrize(
    ("argv", "placement"),
    [
        ([], DevicePlacement("cpu", "float32")),
        (["--dtype", "float16"], DevicePlacement("cpu", "float16")),
        (["--device", "cuda"], DevicePlacement("cuda", "bfloat16")),
        (["--device", "cuda:1", "--dtype", "float32"], DevicePlacement("cuda:1", "float32")),
    ],
)
def test_the_default_dtype_follows_the_device(
    argv: list[str], placement: DevicePlacement, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert device_placement(_parser().parse_args(argv)) == placement
    assert default_dtype("cpu") == "float32"
    assert default_dtype("cuda:3") == "bfloat16"


def test_a_placement_checks_its_fields() -> None:
    with pytest.raises(ValueError) as info:
        DevicePlacement("gpu")
    assert str(info.value) == "--device: expected cpu, cuda or cuda:N (N a GPU index), got 'gpu'"
    with pytest.raises(ValueError) as info:
        DevicePlacement("cpu", "int8")
    assert (
        str(info.value) == "--dtype: expected one of ['float32', 'bfloat16', 'float16'], got 'int8'"
    )
    assert DevicePlacement.on("cuda") == DevicePlacement("cuda", "bfloat16")


@pytest.mark.usefixtures("no_cuda")
@pytest.mark.parametrize("device", ["cuda", "cuda:0"])
def test_cuda_without_cuda_names_the_flag(device: str) -> None:
    with pytest.raises(UserInputError) as info:
        check_device_available(device)
    assert str(info.value) == _unavailable(device)
    check_device_available("cpu")  # the CPU is always there


def test_a_gpu_index_past_the_last_names_the_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    check_device_available("cuda:1")
    with pytest.raises(UserInputError) as info:
        check_device_available("cuda:2")
    assert str(info.value) == "--device cuda:2: this machine has 2 CUDA device(s), cuda:0..cuda:1"


def _prog(command: list[str]) -> str:
    return " ".join(
        ["edgespec", *command[:2]] if command[0] == "bench" else ["edgespec", command[0]]
    )


@pytest.mark.parametrize(
    "command", COMMANDS, ids=lambda c: c[0] + (f"-{c[1]}" if c[0] == "bench" else "")
)
@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--device", "gpu", "expected cpu, cuda or cuda:N (N a GPU index), got 'gpu'"),
        (
            "--dtype",
            "int8",
            "invalid choice: 'int8' (choose from 'float32', 'bfloat16', 'float16')",
        ),
    ],
)
def test_bad_values_are_usage_errors_naming_the_flag(
    command: list[str], flag: str, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*command, flag, value])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.endswith(f"{_prog(command)}: error: argument {flag}: {message}\n")


class Loaded(Exception):
    """Raised in place of loading a model: the device was not checked first."""


@pytest.mark.usefixtures("no_cuda")
@pytest.mark.parametrize(
    "command", COMMANDS, ids=lambda c: c[0] + (f"-{c[1]}" if c[0] == "bench" else "")
)
def test_cuda_without_cuda_fails_before_any_weight_loads(
    command: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def load(*args: object, **kwargs: object) -> None:
        raise Loaded

    monkeypatch.setattr("edgespec.models.loading._load", load)
    argv = [*command, "--device", "cuda"]
    if command[0] == "bench":
        argv += ["--target", "never-loaded"]
    assert main(argv) == 2
    assert capsys.readouterr().err == f"{_prog(command)}: {_unavailable('cuda')}\n"


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["serve", "--target", "never-loaded", "--backend", "llamacpp", "--device", "cuda"],
            "edgespec serve: --device cuda is for --backend transformers; llama.cpp puts layers "
            "on a GPU with --llamacpp-gpu-layers N",
        ),
        (
            ["serve", "--target", "never-loaded", "--backend", "llamacpp", "--dtype",
             "bfloat16"],
            "edgespec serve: --dtype bfloat16 is for --backend transformers; llama.cpp runs the "
            "GGUF file's own quantization",
        ),
        (
            ["draft", "--server", "127.0.0.1:1", "--prompt", "a", "--backend", "llamacpp",
             "--device", "cuda:0"],
            "edgespec draft: --device cuda:0 is for --backend transformers",
        ),
    ],
)  # fmt: skip
def test_a_gpu_for_llamacpp_is_refused_naming_the_flags(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err == line + "\n"
