"""``edgespec draft --tree``: a --tree-max-nodes at the server's max_draft_tokens is kept
silently, one over it is cut to it with a warning; --records is rewritten each run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from tests.runtime.conftest import ServerFactory


def _drafted(records: Path) -> list[int]:
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    assert rows[-1]["type"] == "RequestRecord"
    assert all(row["type"] == "RoundRecord" for row in rows[:-1])
    return [row["num_drafted"] for row in rows[:-1]]


def test_tree_max_nodes_at_and_over_the_server_limit(
    make_server: ServerFactory,
    draft_model: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = make_server(max_draft_tokens=8)
    draft_dir = tmp_path / "draft"
    draft_model.save_pretrained(draft_dir)
    records = tmp_path / "rounds.jsonl"
    records.write_text(json.dumps({"type": "stale"}) + "\n")
    args = ["draft", "--server", f"127.0.0.1:{server.port}", "--draft", str(draft_dir)]
    args += ["--prompt-ids", "5,6,7,8,9", "--max-new-tokens", "10", "--tree", "3,3"]
    args += ["--records", str(records)]
    assert main([*args, "--tree-max-nodes", "8"]) == 0
    err = capsys.readouterr().err
    assert "exceeds the server's max_draft_tokens" not in err
    assert max(_drafted(records)) == 8
    assert main([*args, "--tree-max-nodes", "9"]) == 0
    err = capsys.readouterr().err
    warning = "edgespec draft: tree_max_nodes 9 exceeds the server's max_draft_tokens 8; using 8"
    assert warning in err.replace("\r", "\n").splitlines()  # a line of its own
    assert max(_drafted(records)) == 8
