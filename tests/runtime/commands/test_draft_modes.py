"""``edgespec draft`` in every mode alike: the tokenizer comes from the draft or the
server's target without loading weights, centralized prints the same stats line and
writes ``--records``, ``--compare`` runs both modes and checks the outputs, and the
server is reached before the draft loads."""

from __future__ import annotations

import contextlib
import io
import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.models import loading
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.wire import grpc_client
from edgespec.runtime.wire.inprocess import target_greedy_decode
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.commands.draft_stages import split_stages
from tests.word_tokenizer import make_word_tokenizer

PROMPT = (1, 2, 3)


@pytest.fixture
def no_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a model's weights were loaded")

    monkeypatch.setattr(loading, "load_model", refuse)


def _reference(target: TransformersTarget, n: int) -> tuple[int, ...]:
    return tuple(target_greedy_decode(target, PROMPT, n))


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.usefixtures("no_weights")
@pytest.mark.parametrize("draft", ["model", "ngram"])
def test_centralized_text_prompt_stats_and_records_without_loading_weights(
    draft: str,
    server: ServerThread,
    model_dir: Path,
    target: TransformersTarget,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The tokenizer comes from the draft (by its name) or, for ``ngram``, from the
    server's target; neither loads weights."""
    records = tmp_path / "records.jsonl"
    name = str(model_dir) if draft == "model" else "ngram"
    argv = ["draft", "--server", f"127.0.0.1:{server.port}", "--mode", "centralized"]
    argv += ["--draft", name, "--prompt", "w1 w2 w3", "--max-new-tokens", "6"]
    assert main([*argv, "--records", str(records)]) == 0
    out = capsys.readouterr()
    decoded: str = make_word_tokenizer(64).decode(list(_reference(target, 6)))
    assert out.out == decoded + "\n"
    err = split_stages(out.err)[1]
    assert err[0].startswith("[centralized: 6 tokens, ") and "tok/s, first token " in err[0]
    (row,) = _rows(records)
    assert (row["type"], row["num_prompt_tokens"], row["num_output_tokens"]) == (
        "RequestRecord", 3, 6,
    )  # fmt: skip
    assert row["arrival_s"] <= row["first_token_s"] <= row["finish_s"]


def test_distributed_prints_text_with_the_servers_tokenizer_and_the_same_stats(
    server: ServerThread, target: TransformersTarget, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["draft", "--server", f"127.0.0.1:{server.port}", "--draft", "ngram"]
    assert main([*argv, "--prompt", "w1 w2 w3", "--max-new-tokens", "6"]) == 0
    out = capsys.readouterr()
    decoded: str = make_word_tokenizer(64).decode(list(_reference(target, 6)))
    assert out.out == decoded + "\n"
    err = split_stages(out.err)[1]
    assert err[0].startswith("[distributed: 6 tokens, ") and "first token " in err[0]
    assert " rounds, " in out.err and "accepted per round" in out.err


def test_compare_runs_both_modes_and_checks_the_outputs(
    server: ServerThread, target: TransformersTarget, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    records = tmp_path / "records.jsonl"
    argv = ["draft", "--server", f"127.0.0.1:{server.port}", "--draft", "ngram", "--compare"]
    argv += ["--prompt-ids", "1,2,3", "--max-new-tokens", "8", "--records", str(records)]
    assert main(argv) == 0
    out = capsys.readouterr()
    text: str = make_word_tokenizer(64).decode(list(_reference(target, 8)))
    assert out.out == (
        f"centralized (the server decodes alone):\n{text}\n"
        f"distributed (drafted here, verified by the server):\n{text}\n"
    )
    stages, lines = split_stages(out.err)
    assert stages[-1] == "ready" and stages.count("ready") == 1  # before centralized only
    assert lines[0].startswith("[centralized: 8 tokens, ")
    assert lines[1].startswith("[distributed: 8 tokens, ")
    assert re.fullmatch(
        r"speed-up: \d+\.\d\dx \(distributed \d+\.\d tok/s over centralized \d+\.\d tok/s, "
        r"the server's exact kernels\); outputs identical",
        lines[2],
    ), lines[2]
    assert lines[3].startswith("baseline: the exact kernels pad each pass to 8 rows")
    rows = _rows(records)
    assert rows[-1]["type"] == "RequestRecord" and rows[-1]["num_rounds"] == len(rows) - 1


def test_compare_says_ready_before_its_first_label(
    server: ServerThread, capsys: pytest.CaptureFixture[str]
) -> None:
    """On one terminal stderr's ``ready`` comes before stdout's first label: the label was
    printed before the centralized run began, so the start-up's last stage line came after
    it, between the label and its text."""
    argv = ["draft", "--server", f"127.0.0.1:{server.port}", "--draft", "ngram", "--compare"]
    both = io.StringIO()
    with contextlib.redirect_stdout(both), contextlib.redirect_stderr(both):
        assert main([*argv, "--prompt-ids", "1,2,3", "--max-new-tokens", "4"]) == 0
    lines = both.getvalue().splitlines()
    label = lines.index("centralized (the server decodes alone):")
    stages = split_stages("\n".join(lines[:label]))[0]
    assert stages[-1] == "ready", lines


def test_compare_exits_1_when_the_outputs_differ(
    server: ServerThread, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = grpc_client.RemoteVerifier.generate

    def shifted(self: Any, *args: Any, **kwargs: Any) -> Iterator[tuple[int, ...]]:
        for chunk in real(self, *args, **kwargs):
            yield tuple((t + 1) % 64 for t in chunk)

    monkeypatch.setattr(grpc_client.RemoteVerifier, "generate", shifted)
    argv = ["draft", "--server", f"127.0.0.1:{server.port}", "--draft", "ngram", "--compare"]
    assert main([*argv, "--prompt-ids", "1,2,3", "--max-new-tokens", "4"]) == 1
    speedup = [x for x in capsys.readouterr().err.splitlines() if x.startswith("speed-up: ")]
    assert len(speedup) == 1 and speedup[0].endswith("outputs differ from token 0")


def test_a_sampled_compare_times_both_and_compares_no_tokens(
    server: ServerThread, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was refused (greedy only): two seeded draws of one distribution need not agree, so
    the speed-up is said and the outputs are not held against each other (exit 0);
    ``--ignore-eos`` gives both the whole budget."""
    argv = ["draft", "--server", f"127.0.0.1:{server.port}", "--draft", "ngram", "--compare",
            "--prompt-ids", "1,2,3", "--max-new-tokens", "6", "--temperature", "0.9",
            "--top-k", "8", "--seed", "4", "--ignore-eos"]  # fmt: skip
    assert main(argv) == 0
    _, lines = split_stages(capsys.readouterr().err)
    assert lines[0].startswith("[centralized: 6 tokens, ")
    assert lines[1].startswith("[distributed: 6 tokens, ")
    assert lines[2].endswith("; outputs sampled (two draws of the target's distribution, not "
                             "compared token by token)")  # fmt: skip


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--mode", "centralized"],
            "--mode: --compare runs centralized beside a distributed "
            "run (the default) or a fused one (--mode fused): drop --mode",
        ),
    ],
)
def test_compare_refusals(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["draft", "--draft", "ngram", "--prompt-ids", "1", "--compare", *flags]
    assert main(argv) == 2
    assert f"edgespec draft: {message}" in capsys.readouterr().err


@pytest.mark.usefixtures("no_weights")
def test_the_server_is_reached_before_the_draft_loads(
    model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as probe:  # a port nothing listens on once the probe closes
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = ["draft", "--server", f"127.0.0.1:{port}", "--draft", str(model_dir)]
    assert main([*argv, "--prompt-ids", "1,2"]) == 1
    assert "UNAVAILABLE" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "stages"),
    [
        (["--draft", "ngram"], ["loading the tokenizer {model}"]),
        (["--draft", "{model}"], ["loading the draft {model}"]),
        (["--draft", "{model}", "--mode", "centralized"], ["loading the tokenizer {model}"]),
        (["--draft", "ngram", "--tokenizer", "{model}"], ["loading the tokenizer {model}"]),
    ],
)
def test_draft_says_each_start_up_stage_on_stderr(
    flags: list[str],
    stages: list[str],
    server: ServerThread,
    model_dir: Path,
    target: TransformersTarget,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Seconds of imports and loading passed in silence before the first token: draft names
    each slow stage as it starts (stderr, as serve does), ``ready`` just before the first
    round, then the stats line; stdout is the generated text alone."""
    address = f"127.0.0.1:{server.port}"
    argv = ["draft", "--server", address, *(f.format(model=model_dir) for f in flags)]
    assert main([*argv, "--prompt", "w1 w2 w3", "--max-new-tokens", "6"]) == 0
    out = capsys.readouterr()
    decoded: str = make_word_tokenizer(64).decode(list(_reference(target, 6)))
    assert out.out == decoded + "\n"
    started, rest = split_stages(out.err)
    expected = [f"connecting to {address}", *(s.format(model=model_dir) for s in stages)]
    assert started == [f"{stage} ..." for stage in expected] + ["ready"]
    mode = "centralized" if "centralized" in flags else "distributed"
    assert out.err.splitlines()[len(started) :] == rest  # the stages first, then the stats
    assert len(rest) == 1 and rest[0].startswith(f"[{mode}: 6 tokens, ")
