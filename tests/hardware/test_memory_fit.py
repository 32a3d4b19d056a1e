"""A server pool whose model's weights and KV budget are more than its card's memory is
said before a run: the bundled scenarios kept 200,000 tokens of Qwen3-32B's KV (52.4 GB)
beside its 65.5 GB of weights on an 80 GB A100, a server that cannot exist (the budget
never bound there, so their results are unchanged at 48,000)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from edgespec.cli import main
from edgespec.hardware.memory_fit import kv_tokens_that_fit, memory_fit_warning
from edgespec.hardware.presets import load_architecture, load_hardware


def test_qwen3_32b_on_an_a100_holds_55225_tokens_of_kv() -> None:
    model, card = load_architecture("qwen3-32b"), load_hardware("a100")
    assert model.kv_bytes_per_token == 2 * 64 * 8 * 128 * 2  # K and V, 64 layers, 8 heads
    assert kv_tokens_that_fit(model, card) == 55_225
    assert memory_fit_warning("p", model, card, 55_225) is None
    assert memory_fit_warning("p", model, card, 200_000) == (
        "warning: server pool 'p': qwen3-32b's weights (65.5 GB) and kv_budget_tokens 200,000 "
        "(52.4 GB at 262,144 bytes a token) need 118.0 GB, over a100's 80 GB: the simulated "
        "server keeps more KV than the card holds (at most 55,225 tokens beside the weights)"
    )


def test_sim_says_it_once_per_pool_and_the_bundled_default_fits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["sim", "duration_s=0.5", "--quiet", "--no-plots"]
    assert main([*argv, "--out", "a"]) == 0
    assert "warning" not in capsys.readouterr().err
    over = "auto_topology.servers.0.kv_budget_tokens=200000"
    assert main([*argv, over, "--out", "b"]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if "GB" in line]
    line = memory_fit_warning("a100", load_architecture("qwen3-32b"), load_hardware("a100"),
                              200_000)  # fmt: skip
    assert line is not None and said == [f"edgespec sim: {line}"]
    servers = yaml.safe_load(Path("b/scenario.yaml").read_text())["auto_topology"]["servers"]
    assert servers[0]["kv_budget_tokens"] == 200_000
