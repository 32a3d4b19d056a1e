"""``edgespec draft --verify semantic`` and ``edgespec serve --semantic-head``: the flags,
their errors, and a lossy run whose every output says so (the LOSSY line, the labelled
``--records`` rows and their summary with WISV's AAL)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgespec.cli import build_parser, main
from edgespec.config import ConfigError, load_config
from edgespec.policies.semantic.head import DecisionHead
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.commands.serve import _overrides
from edgespec.runtime.commands.serve_service import semantic_head, semantic_rules_for
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.round_log import read_round_log
from edgespec.runtime.server.semantic import SEMANTIC, semantic_rules
from edgespec.runtime.testing import tiny_llama
from tests.runtime.commands.draft_stages import split_stages
from tests.runtime.conftest import start_server
from tests.runtime.semantic_helpers import HIDDEN, NUM_CSI, accept_all_reference, constant_head

PROMPT = (3, 1, 4, 1, 5)


@pytest.fixture(scope="module")
def draft_dir(tmp_path_factory: pytest.TempPathFactory, draft_model: Any) -> Path:
    directory = tmp_path_factory.mktemp("draft")
    draft_model.save_pretrained(directory)
    return directory


def _draft_argv(port: int, draft_dir: Path, *flags: str) -> list[str]:
    return [
        "draft",
        "--server",
        f"127.0.0.1:{port}",
        "--draft",
        str(draft_dir),
        "--prompt-ids",
        "3,1,4,1,5",
        "--max-new-tokens",
        "12",
        "--gamma",
        "4",
        *flags,
    ]


@pytest.mark.parametrize("upload", ["fh", "sh"])
def test_a_semantic_run_says_lossy_everywhere(
    target: TransformersTarget,
    target_model: Any,
    draft_model: Any,
    draft_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    upload: str,
) -> None:
    records = tmp_path / "records.jsonl"
    server = start_server(target, rules=semantic_rules(constant_head(-20.0)))
    try:
        argv = _draft_argv(
            server.port,
            draft_dir,
            "--verify",
            "semantic",
            "--threshold",
            "12",
            "--channel-uplink-mbps",
            "20",
            "--upload",
            upload,
            "--records",
            str(records),
        )
        assert main(argv) == 0
    finally:
        server.stop(grace_s=0)
    out = capsys.readouterr()
    shown = [int(t) for t in re.findall(r"\d+", out.out)]  # token ids, chunk by chunk
    assert tuple(shown) == accept_all_reference(target_model, draft_model, PROMPT, 4, 12)
    err = split_stages(out.err)[1]  # after the start-up stages
    assert err[0].startswith("[distributed: 12 tokens, ")
    assert err[1].startswith(
        "LOSSY semantic verification (threshold 12/16): the output may differ from the "
        "target's own greedy decoding; "
    )
    assert "AAL 4.00 committed tokens per round (correction/bonus included)" in err[1]
    assert f"upload {upload.upper()} (handshake RTT " in err[1]
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    *rounds, request, summary = rows
    labels = {"verification": "semantic", "lossy": True, "threshold": 12, "upload": upload}
    for row in (*rounds, request, summary):
        assert {k: row[k] for k in labels} == labels
    assert [r["type"] for r in rounds] == ["RoundRecord"] * 3 and request["type"] == "RequestRecord"
    assert all(r["accepted_mismatches"] >= 0 and r["exchanges"] in (1, 2) for r in rounds)
    assert summary["type"] == "SemanticSummary" and summary["committed_per_round"] == 4.0
    assert summary["num_rounds"] == 3
    assert summary["num_exchanges"] == sum(r["exchanges"] for r in rounds)
    assert len(list(read_round_log(records))) == 3  # the labels do not get in the way


def test_an_exact_run_prints_and_writes_no_labels(
    target: TransformersTarget,
    draft_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    records = tmp_path / "records.jsonl"
    server = start_server(target, rules=semantic_rules(constant_head(-20.0)))
    try:
        assert main(_draft_argv(server.port, draft_dir, "--records", str(records))) == 0
    finally:
        server.stop(grace_s=0)
    assert "LOSSY" not in capsys.readouterr().err
    for row in (json.loads(line) for line in records.read_text().splitlines()):
        assert not {"verification", "lossy", "threshold"} & set(row)


def test_a_server_without_a_head_refuses_semantic_sessions(
    target: TransformersTarget, draft_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = start_server(target)
    try:
        argv = _draft_argv(
            server.port,
            draft_dir,
            "--verify",
            "semantic",
            "--threshold",
            "12",
            "--channel-uplink-mbps",
            "20",
        )
        assert main(argv) == 1
    finally:
        server.stop(grace_s=0)
    assert "unknown verification rule 'semantic'; this server serves ['exact']" in (
        capsys.readouterr().err
    )


SEMANTIC_FLAGS = ["--verify", "semantic", "--threshold", "12", "--channel-uplink-mbps", "20"]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--threshold", "12"], "--threshold: is the semantic threshold: needs --verify semantic"),
        (  # none given: the --verify semantic that needs one (was "config field 'threshold'")
            ["--verify", "semantic", "--channel-uplink-mbps", "20"],
            "--verify: semantic verification needs a threshold in 0..16 (--threshold T;",
        ),
        (
            [*SEMANTIC_FLAGS[:2], "--threshold", "17", *SEMANTIC_FLAGS[4:]],
            "--threshold: semantic verification needs a threshold in 0..16",
        ),
        (  # was "config field 'channel_uplink_mbps'", a field nobody gave
            ["--verify", "semantic", "--threshold", "12"],
            "--verify: semantic verification reports the device's uplink rate",
        ),
        ([*SEMANTIC_FLAGS, "--channel-per", "1.5"], "--channel-per: must be in [0, 1), got 1.5"),
        (
            [*SEMANTIC_FLAGS, "--temperature", "0.7"],
            "--verify: semantic verification is greedy only",
        ),
        ([*SEMANTIC_FLAGS, "--tree", "2,1"], "--verify: semantic verification takes chains"),
        (
            [*SEMANTIC_FLAGS, "--mode", "centralized"],
            "--verify: semantic needs --mode distributed, got centralized",
        ),
        (
            [*SEMANTIC_FLAGS, "--compare"],
            "--verify: --compare checks token-identical outputs; semantic is lossy",
        ),
    ],
)
def test_draft_flag_errors(
    flags: list[str], message: str, draft_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["draft", "--draft", str(draft_dir), "--prompt-ids", "1,2", *flags]
    assert main(argv) == 2
    assert f"edgespec draft: {message}" in capsys.readouterr().err


def test_ngram_cannot_verify_semantically(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["draft", "--draft", "ngram", "--prompt-ids", "1", *SEMANTIC_FLAGS]) == 2
    assert "semantic verification needs a neural draft model" in capsys.readouterr().err


def test_the_channel_defaults_to_the_emulated_link() -> None:
    config = load_config(
        DrafterConfig,
        None,
        [
            "draft=x",
            "verification=semantic",
            "threshold=12",
            "link_bandwidth_mbps=50",
            "link_rtt_ms=40",
            "upload=fh",
        ],
    )
    request = config.semantic_request()
    assert request is not None
    assert (request.uplink_bps, request.rtt_s, request.upload) == (50e6, 0.04, "fh")
    assert load_config(DrafterConfig, None, []).semantic_request() is None


def test_the_bundled_pairs_draft_defaults_to_the_shipped_threshold() -> None:
    """Without a threshold, a semantic session of the bundled pair's draft gets the
    bundled head's shipped default (the measured table's); any other draft must give one."""
    from edgespec.config import ConfigError
    from edgespec.policies.semantic.agreement import load_agreement

    table = load_agreement()
    assert table is not None and table.default_threshold == 1
    flags = ["verification=semantic", "channel_uplink_mbps=20"]
    config = load_config(DrafterConfig, None, ["draft=gemma3-270m-draft", *flags])
    assert config.threshold is None and config.semantic_threshold == 1
    request = config.semantic_request()
    assert request is not None and request.threshold == 1
    chosen = load_config(DrafterConfig, None, ["draft=gemma3-270m-draft", "threshold=12", *flags])
    assert chosen.semantic_threshold == 12
    with pytest.raises(ConfigError, match="only the bundled gemma3-270m pair has a shipped"):
        load_config(DrafterConfig, None, ["draft=x", *flags])


def _serve_config(*flags: str) -> ServerConfig:
    args = build_parser().parse_args(["serve", *flags])
    return load_config(ServerConfig, None, _overrides(args))


def test_serve_flags_load_the_head_and_check_it_against_the_target(tmp_path: Path) -> None:
    path = tmp_path / "head.json"
    path.write_text(json.dumps(constant_head(-3.0).to_json()))
    config = _serve_config("--semantic-head", str(path), "--semantic-thresholds", "8,12")
    assert (config.semantic_head, config.semantic_thresholds) == (str(path), (8, 12))
    head = semantic_head(config)
    rules = semantic_rules_for(config, head, tiny_llama())
    assert sorted(rules) == ["exact", SEMANTIC]
    with pytest.raises(
        ConfigError, match="target hidden states of width 32; the target's hidden size is 48"
    ):
        semantic_rules_for(config, head, tiny_llama(hidden_size=48))
    assert semantic_rules_for(_serve_config(), None, tiny_llama()) == {"exact": rules["exact"]}


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--semantic-thresholds", "8,12"],
            "--semantic-thresholds: needs a decision head (--semantic-head FILE)",
        ),
        (
            ["--semantic-head", "@HEAD", "--semantic-thresholds", "8,17"],
            "--semantic-thresholds: each must be in 0..16, got 17",
        ),
        (
            ["--semantic-head", "@HEAD", "--semantic-thresholds", "8;12"],
            "config field 'semantic_thresholds': --semantic-thresholds expects comma-separated "
            "integers",
        ),
        (["--semantic-head", "@MISSING"], "--semantic-head: @MISSING does not exist"),
        (["--semantic-head", "@DIR"], "--semantic-head: @DIR is a folder, not a file"),
        (
            ["--semantic-head", "@BAD"],
            "--semantic-head: head policy 'wisv': @BAD is not a decision head: missing keys "
            "'target_hidden', 'mean',",
        ),
        (  # was found only once the target had loaded
            ["--semantic-head", "@CSI"],
            "--semantic-head: @CSI: the decision head takes 3 CSI features; the runtime sends "
            f"{NUM_CSI} (edgespec.policies.semantic.csi)",
        ),
    ],
)
def test_serve_flag_errors(
    flags: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head, bad = tmp_path / "head.json", tmp_path / "bad.json"
    head.write_text(json.dumps(constant_head(-3.0).to_json()))
    bad.write_text(json.dumps({"draft_hidden": 3}))
    csi = tmp_path / "csi.json"  # a head for 3 CSI features
    d_in = 2 * HIDDEN + 3
    three = DecisionHead(HIDDEN, HIDDEN, np.zeros(d_in), np.ones(d_in), np.zeros((d_in, 1)),
                         np.zeros(1), np.zeros((1, 1)), np.zeros(1))  # fmt: skip
    csi.write_text(json.dumps(three.to_json()))
    names = {"@HEAD": str(head), "@MISSING": str(tmp_path / "nope.json"), "@BAD": str(bad),
             "@DIR": str(tmp_path), "@CSI": str(csi)}  # fmt: skip
    argv = ["serve", "--target", "never-loaded", *(names.get(f, f) for f in flags)]
    for name, path in names.items():
        message = message.replace(name, path)
    assert main(argv) == 2
    assert f"edgespec serve: {message}" in capsys.readouterr().err


@pytest.mark.parametrize("threshold", [12.5, True])
def test_a_semantic_request_takes_a_whole_threshold(threshold: Any) -> None:
    """12.5 failed in gRPC's encoder with a TypeError; True was taken as threshold 1."""
    from edgespec.runtime.edge.semantic import SemanticRequest

    with pytest.raises(ValueError, match=r"^threshold must be in 0\.\.16, got "):
        SemanticRequest(threshold, 20e6)
