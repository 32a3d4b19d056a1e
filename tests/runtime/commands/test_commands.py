"""``edgespec serve`` + ``edgespec draft`` end to end, on a tiny model saved to disk: the
output streamed is lossless whatever the draft, and tree, window, tokenizer and message
limit flags reach the drafter. Mistakes found before a server answers:
test_draft_early_errors.py; serve's start-up stages: test_serve_stages.py."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.commands.draft_stages import split_stages
from tests.runtime.commands.processes import Command

PROMPT = (5, 6, 7, 8, 9)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, target_model: Any) -> Iterator[str]:
    model_dir = tmp_path_factory.mktemp("model")
    target_model.save_pretrained(model_dir)
    args = ["serve", "--target", str(model_dir), "--port", "0", "--draft", str(model_dir)]
    args += ["--threads", "1", "--set", "max_batch_size=4"]
    log = tmp_path_factory.mktemp("serve") / "stderr"
    server = Command(args, log, env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        line = server.wait_for("listening on", stdout=True).string
        address = line.split("listening on ")[1].split()[0]
        yield f"{address}|{model_dir}"
    finally:
        server.kill()


def test_draft_command_streams_lossless_output(
    served: str, target: TransformersTarget, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    address, model_dir = served.split("|")
    reference = list(target_greedy_decode(target, PROMPT, 12))
    records = tmp_path / "rounds.jsonl"
    ids = ",".join(map(str, PROMPT))
    for draft in (model_dir, "ngram", f"{model_dir} --lookup", f"{model_dir} --tree 2,2,1"):
        code = main(
            [
                "draft",
                "--server",
                address,
                "--draft",
                *draft.split(),
                "--prompt-ids",
                ids,
                "--max-new-tokens",
                "12",
                "--gamma",
                "3",
                "--records",
                str(records),
            ]
        )
        assert code == 0
        out = capsys.readouterr()
        streamed = [
            int(t) for t in out.out.replace("[", " ").replace("]", " ").replace(",", " ").split()
        ]
        assert streamed == reference
        assert "12 tokens" in out.err
        rows = [json.loads(line) for line in records.read_text().splitlines()]
        assert rows[-1]["type"] == "RequestRecord" and rows[-1]["num_output_tokens"] == 12
        assert all(r["type"] == "RoundRecord" for r in rows[:-1])
    for mode in ("centralized", "fused"):
        assert (
            main(
                [
                    "draft",
                    "--server",
                    address,
                    "--mode",
                    mode,
                    "--prompt-ids",
                    ids,
                    "--max-new-tokens",
                    "12",
                ]
            )
            == 0
        )
        printed = capsys.readouterr().out
        assert [
            int(t) for t in printed.replace("[", " ").replace("]", " ").replace(",", " ").split()
        ] == reference


@pytest.mark.parametrize("flags", [["--lookup"], ["--tree", "2,2"]], ids=["lookup", "tree"])
def test_a_draft_proposing_for_certain_samples_and_top_k_1_keeps_the_greedy_output(
    flags: list[str],
    served: str,
    target: TransformersTarget,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--lookup`` or ``--tree`` with ``--temperature`` (were refused): their tokens are
    proposed for certain (the prompt repeats, so lookup finds them); at top-k 1 only the
    target's likeliest token can be drawn, so the output is its greedy decoding; the rounds
    accepted drafted tokens."""
    address, model_dir = served.split("|")
    prompt = (5, 6, 7, 5, 6, 7, 5)
    records = tmp_path / "rounds.jsonl"
    argv = ["draft", "--server", address, "--draft", model_dir, *flags, "--temperature",
            "0.9", "--top-k", "1", "--seed", "3", "--prompt-ids", ",".join(map(str, prompt)),
            "--max-new-tokens", "12", "--gamma", "3", "--records", str(records)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    streamed = [
        int(t) for t in printed.replace("[", " ").replace("]", " ").replace(",", " ").split()
    ]
    assert streamed == list(target_greedy_decode(target, prompt, 12))
    request = json.loads(records.read_text().splitlines()[-1])
    assert request["type"] == "RequestRecord" and request["num_accepted"] > 0


def test_draft_tree_settings_reach_the_drafter(
    served: str, target: TransformersTarget, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    address, model_dir = served.split("|")
    records = tmp_path / "rounds.jsonl"
    args = ["draft", "--server", address, "--draft", model_dir, "--tree", "3,3"]
    args += ["--prompt-ids", ",".join(map(str, PROMPT)), "--max-new-tokens", "12"]
    assert main([*args, "--tree-max-nodes", "3", "--records", str(records)]) == 0
    out = capsys.readouterr().out
    streamed = [int(t) for t in out.replace("[", " ").replace("]", " ").replace(",", " ").split()]
    assert streamed == list(target_greedy_decode(target, PROMPT, 12))
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    drafted = [r["num_drafted"] for r in rows if r["type"] == "RoundRecord"]
    assert max(drafted) == 3  # capped (a 3,3 tree of depth 4 holds up to 3 + 9 + 9 + 9)
    args[args.index("3,3")] = "3,3,3"  # up to 3 + 9 + 27 + 27 tokens: over the server's 32
    assert main([*args, "--tree-max-nodes", "40", "--records", str(records)]) == 0
    err = capsys.readouterr().err
    assert "tree_max_nodes 40 exceeds the server's max_draft_tokens 32; using 32" in err
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    assert max(r["num_drafted"] for r in rows if r["type"] == "RoundRecord") == 32


def test_draft_text_prompt_without_tokenizer(
    served: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    address, model_dir = served.split("|")
    draft = ["draft", "--server", address, "--draft", "ngram"]
    assert main([*draft, "--prompt", "hello"]) == 2
    stages, rest = split_stages(capsys.readouterr().err)
    assert stages == [f"connecting to {address} ...", f"loading the tokenizer {model_dir} ..."]
    assert rest == [
        "edgespec draft: --prompt: text prompts need a tokenizer: the draft has "
        f"none, nor has the server's target '{model_dir}' one here (--tokenizer MODEL, or "
        "--prompt-ids)"
    ]
    missing = str(tmp_path / "nowhere")
    assert main([*draft, "--prompt", "hi", "--tokenizer", missing]) == 2
    expected = f"edgespec draft: --tokenizer: no tokenizer found at '{missing}'"
    assert expected in capsys.readouterr().err


def test_draft_command_refuses_an_id_outside_the_vocabulary_in_one_line(
    served: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server refused it (exit 1) after the draft loaded; the vocabulary is known from
    its Health first (test_draft_prompt_vocab.py: before anything loads)."""
    address = served.split("|")[0]
    code = main(["draft", "--server", address, "--draft", "ngram", "--prompt-ids", "1,2,999"])
    assert code == 2
    assert split_stages(capsys.readouterr().err)[1] == [
        "edgespec draft: --prompt-ids: token 2 (id 999) is outside the target's vocabulary [0, 64)"
    ]  # after the start-up stages


def test_draft_window_flag_picks_the_policy(
    served: str, target: TransformersTarget, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    address = served.split("|")[0]
    records = tmp_path / "rounds.jsonl"
    args = ["draft", "--server", address, "--draft", "ngram", "--records", str(records)]
    args += ["--prompt-ids", ",".join(map(str, PROMPT)), "--max-new-tokens", "16"]
    window = ["--window", "dynamic", "--set", "window.params={initial_gamma: 2, max_gamma: 6}"]
    assert main([*args, *window]) == 0
    out = capsys.readouterr().out
    streamed = [int(t) for t in out.replace("[", " ").replace("]", " ").replace(",", " ").split()]
    assert streamed == list(target_greedy_decode(target, PROMPT, 16))
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    drafted = [r["num_drafted"] for r in rows if r["type"] == "RoundRecord"]
    assert drafted[0] == 2  # the dynamic window's initial γ, not the static default 4
    assert main([*args, "--window", "dynamic", "--gamma", "3"]) == 2
    assert "give --window or --gamma (a static window), not both" in capsys.readouterr().err
    assert main([*args, "--window", "nosuch"]) == 2
    assert "unknown window policy 'nosuch'" in capsys.readouterr().err


def test_the_clients_message_limit_is_the_flags(
    served: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--max-message-bytes`` reaches the client's channel: a limit below the server's
    Health reply refuses that reply (INVALID_ARGUMENT naming the flag: it was gRPC's
    RESOURCE_EXHAUSTED, which reads as a busy server), the default takes it."""
    address, _ = served.split("|")
    args = ["draft", "--server", address, "--draft", "ngram", "--prompt-ids", "1,2",
            "--max-new-tokens", "2"]  # fmt: skip
    assert main([*args, "--max-message-bytes", "4"]) == 1
    (err,) = split_stages(capsys.readouterr().err)[1]
    said = err.split(" bytes, ", 1)
    assert said[0].startswith(
        "edgespec draft: INVALID_ARGUMENT: the verification server's reply is "
    ) and said[1] == (
        "over the client's gRPC message limit of 4 (edgespec draft --max-message-bytes; the "
        "server's max_message_bytes is higher): set the two alike, or ask for a smaller reply "
        "(a shorter prompt, fewer logprobs)"
    ), err
    assert main(args) == 0


def test_compare_with_mode_fused_checks_the_fused_output_against_centralized(
    served: str, target: TransformersTarget, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was refused (``--compare runs distributed and centralized``): fused output had no
    built-in check against the target's own decoding. Both outputs are target-only greedy
    decoding's; the stats lines and the speed-up name the fused run."""
    address = served.split("|")[0]
    records = tmp_path / "records.jsonl"
    argv = ["draft", "--server", address, "--mode", "fused", "--compare", "--gamma", "3",
            "--prompt-ids", ",".join(map(str, PROMPT)), "--max-new-tokens", "12",
            "--records", str(records)]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr()
    reference = list(target_greedy_decode(target, PROMPT, 12))
    labels = ["centralized (the server decodes alone):",
              "fused (drafted and verified by the server):"]  # fmt: skip
    printed = out.out.splitlines()
    assert printed[0::2] == labels
    for chunks in printed[1::2]:  # each output as streamed, a list per chunk
        assert [int(t) for t in re.findall(r"\d+", chunks)] == reference
    lines = split_stages(out.err)[1]
    assert lines[0].startswith("[centralized: 12 tokens, ")
    assert lines[1].startswith("[fused: 12 tokens, ")
    assert re.fullmatch(
        r"speed-up: \d+\.\d\dx \(fused \d+\.\d tok/s over centralized \d+\.\d tok/s, "
        r"the server's exact kernels\); outputs identical",
        lines[2],
    ), lines[2]
    (row,) = [json.loads(line) for line in records.read_text().splitlines()]
    assert (row["type"], row["num_output_tokens"]) == ("RequestRecord", 12)
