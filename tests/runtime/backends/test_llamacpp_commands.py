"""``--backend llamacpp`` on ``edgespec serve`` and ``edgespec draft``: the flags, what they
load, their refusals; and (slow, EDGESPEC_SLOW=1) the real Gemma 3 270M served and drafted
on llama.cpp from the command line, token-identical to centralized decoding."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.runtime.backends.llamacpp_fixtures import SKIP_REASON, VOCAB, tiny_gguf

pytest.importorskip("llama_cpp", reason=SKIP_REASON)
pytest.importorskip("gguf", reason="the tiny test model is written with the gguf package")

from edgespec.cli import main
from edgespec.config import ConfigError
from edgespec.errors import UserInputError
from edgespec.models.registry import ModelNotFoundError
from edgespec.runtime.backends.llamacpp_backend import LlamaCppTarget
from edgespec.runtime.backends.llamacpp_context import LlamaCppSettings
from edgespec.runtime.backends.llamacpp_draft import LlamaCppDraft
from edgespec.runtime.commands.cpus import thread_count
from edgespec.runtime.commands.serve import backend_label
from edgespec.runtime.commands.serve_arguments import add_arguments
from edgespec.runtime.commands.serve_target import load_target, target_choice
from edgespec.runtime.edge.draft_backends import load_draft_model, make_drafter
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import ServerHealth, SessionSpec
from edgespec.runtime.server.config import ServerConfig
from tests.runtime.commands.draft_stages import split_stages


def _serve_args(*flags: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(flags))


def test_serve_backend_flags_choose_the_exact_or_the_lossy_configuration(tmp_path: Path) -> None:
    gguf = str(tiny_gguf(0))
    assert target_choice(_serve_args(), gguf, None).llama is None  # transformers by default
    exact = target_choice(_serve_args("--backend", "llamacpp", "--llamacpp-sequences", "3"),
                          gguf, 1)  # fmt: skip
    assert (exact.llama.exact, exact.llama.sequences, exact.llama.threads) == (True, 3, 1)
    assert exact.llama.gpu_layers == 0  # the CPU unless asked
    gpu = target_choice(_serve_args("--backend", "llamacpp", "--llamacpp-gpu-layers", "99"),
                        gguf, 1)  # fmt: skip
    assert gpu.llama.gpu_layers == 99
    lossy = target_choice(_serve_args("--backend", "llamacpp-lossy"), gguf, None)
    assert lossy.llama.exact is False and lossy.llama.context_tokens == 2048
    assert backend_label(exact) == " on llamacpp"
    assert backend_label(lossy) == " on llamacpp-lossy (LOSSY)"
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelNotFoundError, match="loads GGUF models"):
        target_choice(_serve_args("--backend", "llamacpp"), str(tmp_path), None)
    with pytest.raises(SystemExit):
        _serve_args("--backend", "vllm")
    with pytest.raises(UserInputError, match="--llamacpp-sequences must be >= 2"):
        target_choice(_serve_args("--backend", "llamacpp", "--llamacpp-sequences", "1"), gguf, 1)


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [("--llamacpp-gpu-layers", "-1", "must be >= 0, got -1"),
     ("--llamacpp-sequences", "257", "must be <= 256 (the most sequences a llama.cpp context "
      "holds), got 257")],
)  # fmt: skip
def test_llamacpp_flags_out_of_range_are_refused_at_the_flag(
    flag: str, value: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """They were refused later naming the settings' field (``gpu_layers``) or as a context
    llama.cpp could not make, without its limit."""
    with pytest.raises(SystemExit):
        _serve_args("--backend", "llamacpp", flag, value)
    assert f"argument {flag}: {said}" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--llamacpp-sequences", "4"), ("--llamacpp-gpu-layers", "5"), ("--llamacpp-context", "99")],
)
@pytest.mark.parametrize("backend", ["transformers", "transformers-lossy"])
def test_a_llamacpp_flag_is_refused_on_a_transformers_backend(
    backend: str, flag: str, value: str
) -> None:
    """They were taken and ignored: an operator's --llamacpp-sequences cap on sessions did
    nothing, --llamacpp-gpu-layers ran the target on the CPU."""
    args = _serve_args("--backend", backend, flag, value)
    with pytest.raises(UserInputError) as info:
        target_choice(args, "gemma3-270m", None)
    assert str(info.value) == f"{flag} is for --backend llamacpp or llamacpp-lossy, not {backend}"


def test_the_loaded_target_caps_sessions_to_its_sequences() -> None:
    args = _serve_args("--backend", "llamacpp", "--llamacpp-sequences", "3",
                       "--llamacpp-context", "256")  # fmt: skip
    config = ServerConfig(target=str(tiny_gguf(0)))
    said: list[str] = []
    loaded = load_target(target_choice(args, config.target, 1), config, False, said.append)
    assert isinstance(loaded.backend, LlamaCppTarget)
    assert (loaded.max_sessions, loaded.hidden_size, loaded.model) == (3, 64, None)
    assert "exact, 3 sequences × 256 tokens" in said[0]


def test_the_draft_backend_loads_a_gguf_and_drafts_chains_only() -> None:
    loaded = load_draft_model(str(tiny_gguf(1)), "llamacpp")
    assert loaded.model is loaded and loaded.tokenizer is None
    drafter = make_drafter(str(tiny_gguf(1)), loaded.model, VOCAB, lookup=True)
    assert isinstance(drafter, LlamaCppDraft)
    with pytest.raises(ConfigError, match="chains only"):
        make_drafter(str(tiny_gguf(1)), loaded.model, VOCAB, tree="2,1")
    assert load_draft_model("ngram", "llamacpp") is None
    assert loaded.settings.threads is None  # llama.cpp's default unless told
    assert load_draft_model(str(tiny_gguf(1)), "llamacpp", threads=1).settings.threads == 1


def test_llamacpp_threads_follow_threads_else_the_cpus() -> None:
    """--cpus 0 alone ran llama.cpp on its default 4 threads; the draft ignored --threads."""
    assert thread_count((0,), None) == 1
    assert thread_count((0, 1), 3) == 3
    assert thread_count(None, None) is None


def _edgespec(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "edgespec.cli", *args], capture_output=True,
                          text=True, timeout=timeout, check=False)  # fmt: skip


def _start_serve(*flags: str) -> tuple[subprocess.Popen[str], list[str]]:
    """``edgespec serve FLAGS --port 0``, read up to its listening line (stderr merged)."""
    server = subprocess.Popen(
        [sys.executable, "-m", "edgespec.cli", "serve", *flags, "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    assert server.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any("listening on" in x for x in lines):
        line = server.stdout.readline()
        if not line:
            break
        lines.append(line)
    return server, lines


def _stop(server: subprocess.Popen[str]) -> None:
    server.terminate()
    server.wait(timeout=30)


@pytest.mark.slow
def test_gemma_served_and_drafted_on_llamacpp_is_token_identical_to_centralized() -> None:
    server, lines = _start_serve("--backend", "llamacpp", "--target", "gemma3-270m",
                                 "--threads", "1")  # fmt: skip
    try:
        assert "on llamacpp, batching" in lines[-1], lines
        address = lines[-1].split("listening on ")[1].split(" ")[0]
        for backend in ("transformers", "llamacpp"):
            draft = "ngram" if backend == "transformers" else "gemma3-270m"
            done = _edgespec("draft", "--server", address, "--backend", backend, "--draft",
                             draft, "--prompt", "Q: 2+3=? A:", "--max-new-tokens", "24",
                             "--compare")  # fmt: skip
            assert done.returncode == 0, done.stderr
            assert "outputs identical" in done.stderr
    finally:
        _stop(server)


@pytest.mark.slow
def test_gemma_on_the_lossy_mode_fails_the_self_check_and_says_so() -> None:
    """In a process of its own the tiled matmul is on: Gemma's K-quant products change
    with the batch, the self-check finds it, and only the lossy mode serves."""
    server, lines = _start_serve("--backend", "llamacpp-lossy", "--target", "gemma3-270m")
    try:
        text = "".join(lines)
        assert "LOSSY: batched logits differ from one-at-a-time ones (a cold block" in text
        assert "on llamacpp-lossy (LOSSY)" in lines[-1]
    finally:
        _stop(server)


class RefusingServer:
    """In place of a ``RemoteVerifier``: a server of the target ``the-target`` (no tokenizer
    here) that refuses every session, so ``edgespec draft`` ends after its start-up."""

    def __init__(self, address: str, *settings: object) -> None:
        self.address = address

    def vocab_size(self) -> int:
        return VOCAB

    def check_credentials(self) -> None:
        pass  # it takes any token

    def max_context_tokens(self) -> int | None:
        return None

    def max_draft_tokens(self) -> int | None:
        return None  # an older server's Health: blocks are left to Verify

    def target_name(self) -> str:
        return "the-target"

    def describe(self) -> ServerHealth:
        """Its Health: the facts above, in the one call the command makes."""
        return ServerHealth(True, self.vocab_size(), self.target_name(), self.max_draft_tokens(),
                            self.max_context_tokens(), None, None)  # fmt: skip

    def open(self, spec: SessionSpec) -> None:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, "refused")


def _draft_on_llamacpp(
    gguf: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    backend: str = "llamacpp",
) -> tuple[int, list[str], list[str], list[str]]:
    """``edgespec draft --backend BACKEND --draft GGUF`` against :class:`RefusingServer`:
    its exit status, the last stage said as each llama.cpp model load began, its stage lines
    and its other stderr lines."""
    from edgespec.runtime.backends.llamacpp_context import LlamaContext
    from edgespec.runtime.wire import grpc_client

    monkeypatch.setattr(grpc_client, "RemoteVerifier", RefusingServer)
    err: list[str] = []
    at_load: list[str] = []
    load = LlamaContext.__init__

    def watched(context: LlamaContext, settings: LlamaCppSettings) -> None:
        err.append(capsys.readouterr().err)
        at_load.append(split_stages("".join(err))[0][-1])
        load(context, settings)

    monkeypatch.setattr(LlamaContext, "__init__", watched)
    argv = ["draft", "--server", "127.0.0.1:1", "--backend", backend, "--draft", str(gguf),
            "--prompt-ids", "5,6,7", "--max-new-tokens", "4"]  # fmt: skip
    code = main(argv)
    stages, rest = split_stages("".join([*err, capsys.readouterr().err]))
    return code, at_load, stages, rest


def test_the_draft_gguf_loads_under_the_draft_stage_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The GGUF was first loaded when the drafter was made, after "loading the tokenizer
    ...": its wait showed under the tokenizer's line."""
    gguf = tiny_gguf(1)
    code, at_load, stages, rest = _draft_on_llamacpp(gguf, monkeypatch, capsys)
    assert code == 1 and rest == ["edgespec draft: INVALID_ARGUMENT: refused"]
    assert stages == ["connecting to 127.0.0.1:1 ...", f"loading the draft {gguf} ...",
                      "loading the tokenizer the-target ...", "ready"]  # fmt: skip
    assert at_load[0] == f"loading the draft {gguf} ..."


def test_a_gguf_llamacpp_cannot_load_fails_at_the_draft_stage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before the tokenizer loads (it failed after it, once the drafter was made)."""
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF but not really")
    code, _, stages, rest = _draft_on_llamacpp(bad, monkeypatch, capsys)
    assert code == 2
    assert stages == ["connecting to 127.0.0.1:1 ...", f"loading the draft {bad} ..."]
    assert rest == [
        f"edgespec draft: model file '{bad}' is not a usable GGUF file: it is truncated or "
        "corrupt (Sorry, file appears to be version 1953849888 which we cannot handle)"
    ]


def _truncated_gguf(tmp_path: Path) -> Path:
    """The tiny model cut off halfway through its tensors."""
    whole = tiny_gguf(0).read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(whole[: len(whole) // 2])
    return cut


TRUNCATED = "it is truncated or corrupt (cannot reshape array of size 7216 into shape (64,136))"


@pytest.mark.parametrize("backend", ["transformers", "llamacpp"])
def test_a_truncated_draft_gguf_is_one_line_exit_2_on_either_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    backend: str,
) -> None:  # fmt: skip
    """Not transformers' traceback (exit 1): the file, and what is wrong with it."""
    cut = _truncated_gguf(tmp_path)
    code, _, stages, rest = _draft_on_llamacpp(cut, monkeypatch, capsys, backend)
    assert (code, stages[-1]) == (2, f"loading the draft {cut} ...")
    assert rest == [f"edgespec draft: model file '{cut}' is not a usable GGUF file: {TRUNCATED}"]


@pytest.mark.parametrize("backend", ["transformers", "llamacpp"])
@pytest.mark.parametrize("kind", ["truncated", "no-magic"])
def test_a_broken_target_gguf_is_one_line_exit_2_on_either_backend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str, kind: str
) -> None:
    if kind == "truncated":
        bad, problem = _truncated_gguf(tmp_path), TRUNCATED
    else:
        bad, problem = tmp_path / "bad.gguf", "it does not start with the GGUF magic bytes"
        bad.write_bytes(b"not a model")
    assert main(["serve", "--target", str(bad), "--port", "0", "--backend", backend]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == f"edgespec serve: model file '{bad}' is not a usable GGUF file: {problem}"
