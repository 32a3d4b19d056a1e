"""``edgespec profile --draft`` with a draft of another vocabulary than the target's is
refused in one line once both are loaded, before the target's grid is measured. Before, the
whole grid was measured (minutes at real size), then the drafter's timing ended in a
traceback (``IndexError: index out of range in self``), leaving a checkpoint that the next
plain run refused as an unfinished profile."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.cli import main
from tests.models.pair_dirs import PAIR_VOCAB_REFUSALS, save_pair_models


@pytest.mark.parametrize(("draft", "message"), PAIR_VOCAB_REFUSALS)
def test_a_draft_of_another_vocabulary_is_refused_before_the_grid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    draft: str, message: str,
) -> None:  # fmt: skip
    save_pair_models(tmp_path)
    monkeypatch.chdir(tmp_path)
    argv = ["profile", "--target", "target", "--draft", draft, "--quick", "--scale", "0.05"]
    argv += ["--threads", "1", "--runs", "1", "--warmup", "0", "--out", "run/p.yaml"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == f"edgespec profile: {message}"
    assert "profiled" not in err and not (tmp_path / "run").exists()
