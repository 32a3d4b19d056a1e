"""A semantic-verification setting's error names the other settings the way the one at
fault was given: as config fields when a config file gave it (``file:line: config field
...``), as flags when a flag did (``--flag: ...``). They named flags either way: a file
that set ``threshold: 12`` under exact verification was told ``needs --verify semantic``.
Every error here is the command's exit 2, before any server is reached or model loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.cli import main

THRESHOLD = (
    "T; a mismatch is rejected when the head's p >= T/16; only the bundled gemma3-270m pair "
    "has a shipped default), got None"
)
OWN = (
    "semantic verification judges the draft model's own greedy tokens by its hidden states (a "
    "prompt-lookup token is not one: the head would judge another), not"
)
UPLINK = "semantic verification reports the device's uplink rate to the server's decision head"


@pytest.mark.parametrize(
    ("yaml", "flags", "message"),
    [
        (
            "threshold: 12\n", [],
            "@FILE:1: config field 'threshold': is the semantic threshold: needs verification "
            "semantic",
        ),
        (None, ["--threshold", "12"],
         "--threshold: is the semantic threshold: needs --verify semantic"),
        (
            "upload: sh\n", [],
            "@FILE:1: config field 'upload': is how semantic rounds upload hidden states: needs "
            "verification semantic",
        ),
        (None, ["--upload", "sh"],
         "--upload: is how semantic rounds upload hidden states: needs --verify semantic"),
        (
            "verification: semantic\nchannel_uplink_mbps: 20\n", [],
            "@FILE:1: config field 'verification': semantic verification needs a threshold in "
            f"0..16 (threshold: {THRESHOLD}",
        ),
        (None, ["--verify", "semantic", "--channel-uplink-mbps", "20"],
         f"--verify: semantic verification needs a threshold in 0..16 (--threshold {THRESHOLD}"),
        (
            "verification: semantic\nthreshold: 12\nchannel_uplink_mbps: 20\ntree: '2,1'\n", [],
            "@FILE:1: config field 'verification': semantic verification takes chains, not a "
            "token tree (tree 2,1)",
        ),
        (None, ["--verify", "semantic", "--threshold", "12", "--channel-uplink-mbps", "20",
                "--tree", "2,1"], "--verify: semantic verification takes chains, not --tree"),
        (  # the head judges the draft model's hidden state: a copied token is not its own
            "verification: semantic\nthreshold: 12\nchannel_uplink_mbps: 20\nlookup: true\n", [],
            f"@FILE:1: config field 'verification': {OWN} lookup",
        ),
        (None, ["--verify", "semantic", "--threshold", "12", "--channel-uplink-mbps", "20",
                "--lookup"], f"--verify: {OWN} --lookup"),
        (
            "verification: semantic\nthreshold: 12\n", [],
            f"@FILE:1: config field 'verification': {UPLINK}: give channel_uplink_mbps (or an "
            "emulated link_bandwidth_mbps)",
        ),
        (None, ["--verify", "semantic", "--threshold", "12"],
         f"--verify: {UPLINK}: give --channel-uplink-mbps (or an emulated "
         "--link-bandwidth-mbps)"),
    ],
)  # fmt: skip
def test_draft_semantic_errors_name_fields_from_a_file_and_flags_from_flags(
    yaml: str | None, flags: list[str], message: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """``yaml``: a config file's text (``None``: no file), ``flags``: the flags given."""
    argv = ["draft", "--server", "127.0.0.1:1", "--draft", "some/model", "--prompt-ids", "1"]
    file = tmp_path / "drafter.yaml"
    if yaml is not None:
        file.write_text(yaml)
        argv += ["--config", str(file)]
    assert main([*argv, *flags]) == 2
    assert capsys.readouterr().err == f"edgespec draft: {message.replace('@FILE', str(file))}\n"


@pytest.mark.parametrize(
    ("yaml", "flags", "message"),
    [
        (  # was "... needs a decision head (--semantic-head FILE)"
            "semantic_thresholds: [8, 12]\n", [],
            "@FILE:1: config field 'semantic_thresholds': needs a decision head (semantic_head: "
            "FILE)",
        ),
        ("", ["--semantic-thresholds", "8,12"],
         "--semantic-thresholds: needs a decision head (--semantic-head FILE)"),
    ],
)  # fmt: skip
def test_serve_semantic_thresholds_without_a_head_named_as_given(
    yaml: str, flags: list[str], message: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    file = tmp_path / "server.yaml"
    file.write_text(yaml)
    argv = ["serve", "--target", "never-loaded", "--config", str(file), *flags]
    assert main(argv) == 2
    assert capsys.readouterr().err == f"edgespec serve: {message.replace('@FILE', str(file))}\n"
