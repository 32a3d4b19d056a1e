"""``edgespec drafting-server``, the command: bad flags and a gamma over the server's draft
limit reported before anything loads, an unreachable server in one line with a hint,
``--compare`` runs both modes and writes its JSON, dataset prompts tokenized with the
draft's tokenizer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.testing import VOCAB
from edgespec.runtime.wire.grpc_server import ServerThread
from tests.runtime.conftest import start_server
from tests.word_tokenizer import make_word_tokenizer

CLI = ["drafting-server", "--server", "127.0.0.1:1", "--draft", "somewhere"]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--batch-size", "0"], "config field 'batch_size': must be >= 1, got 0"),
        (["--gamma", "-1"], "config field 'gamma': must be >= 1, got -1"),
        (["--num-sessions", "0"], "config field 'num_sessions': must be >= 1, got 0"),
        (["--max-new-tokens", "0"], "config field 'max_new_tokens': must be >= 1, got 0"),
        (["--compare", "--no-pipeline"], "config field 'pipeline': --compare runs both"),
    ],
)
def test_bad_flags_are_reported_before_anything_loads(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*CLI, *flags]) == 2
    assert capsys.readouterr().err.startswith(f"edgespec drafting-server: {message}")


def test_an_unreachable_server_is_one_line_with_a_hint(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(CLI) == 1
    err = capsys.readouterr().err
    assert err.startswith("edgespec drafting-server: ") and "is an `edgespec serve` running" in err


@pytest.fixture(scope="module")
def draft_dir(tmp_path_factory: pytest.TempPathFactory, draft_model: Any) -> Path:
    """The tiny draft saved with a tokenizer (words ``w0`` … as ids 0 …)."""
    directory = tmp_path_factory.mktemp("draft")
    draft_model.save_pretrained(directory)
    make_word_tokenizer(VOCAB, fuse=False).save_pretrained(directory)
    return directory


def test_compare_runs_both_modes_and_writes_the_json(
    server: ServerThread, target: TransformersTarget, draft_dir: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    out = tmp_path / "out" / "ds.json"
    argv = ["drafting-server", "--server", f"127.0.0.1:{server.port}", "--draft", str(draft_dir)]
    argv += ["--prompt-ids", "1,2,3", "--prompt-ids", "4,5", "--prompt-ids", "9"]
    argv += ["--batch-size", "2", "--gamma", "3", "--max-new-tokens", "6", "--compare"]
    assert main([*argv, "--json", str(out)]) == 0
    err = capsys.readouterr().err
    assert "[not pipelined: 3 sessions in batches of 2, 18 tokens, " in err
    assert "[pipelined: 3 sessions in batches of 2, 18 tokens, " in err
    assert "x; outputs identical" in err
    report = json.loads(out.read_text())
    assert report["identical"] is True and report["speedup"] > 0
    assert set(report["runs"]) == {"not_pipelined", "pipelined"}
    assert report["settings"]["prompt_tokens"] == [3, 2, 1]
    assert report["runs"]["pipelined"]["num_output_tokens"] == 18
    assert report["runs"]["pipelined"]["server_batches"] >= 1


def test_dataset_prompts_are_tokenized_with_the_drafts_tokenizer(
    server: ServerThread, draft_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["drafting-server", "--server", f"127.0.0.1:{server.port}", "--draft", str(draft_dir)]
    argv += ["--prompts", "general", "--num-sessions", "3", "--max-new-tokens", "2"]
    assert main([*argv, "--no-pipeline"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("[not pipelined: 3 sessions in batches of 3, 6 tokens, ")


def test_a_gamma_over_the_servers_draft_limit_is_refused_before_the_draft_loads(
    target: TransformersTarget, capsys: pytest.CaptureFixture[str]
) -> None:
    running = start_server(target, max_draft_tokens=2)
    try:
        argv = ["drafting-server", "--server", f"127.0.0.1:{running.port}", "--draft", "nowhere"]
        assert main([*argv, "--gamma", "3"]) == 2
    finally:
        running.stop(grace_s=0)
    assert capsys.readouterr().err.startswith(
        "edgespec drafting-server: config field 'gamma': 3 exceeds the server's max_draft_tokens 2"
    )
