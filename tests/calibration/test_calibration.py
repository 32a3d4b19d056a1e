"""Calibration check: real loopback run vs the simulator replaying it (tiny synthetic pair)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
import torch

from edgespec.calibration.comparison import compare, summarize_records
from edgespec.calibration.fresh_profile import scenario_grid
from edgespec.calibration.runs import (
    acceptance_seq,
    link_rtt_ms,
    run_real,
    simulate_run,
    write_trace,
)
from edgespec.cli import main
from edgespec.core.types import RoundRecord
from edgespec.profiling.measure import PromptSource
from edgespec.profiling.run import profile_pair, write_profiles
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.testing import layer_truncated_copy, tiny_llama
from edgespec.runtime.wire.inprocess import target_greedy_decode


def _round(index: int, drafted: int, accepted: int) -> RoundRecord:
    return RoundRecord(
        request_id="r", round_index=index, start_s=0.0, end_s=1.0, draft_s=0.1, uplink_s=0.01,
        queue_s=0.0, verify_s=0.5, downlink_s=0.01, num_drafted=drafted,
        num_accepted=accepted, num_committed=accepted + 1, batch_size=1,
    )  # fmt: skip


def test_acceptance_seq_per_position() -> None:
    rounds = [_round(0, 4, 2), _round(1, 4, 4), _round(2, 4, 0), _round(3, 2, 1)]
    assert acceptance_seq(rounds) == [1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 0]


def test_scenario_grid_covers_the_scenario() -> None:
    spec = scenario_grid(prompt_tokens=30, max_new_tokens=40, gamma=4, clients=4)
    assert spec.cold_totals == (34, 68, 136)
    assert spec.new_tokens == (1, 2, 3, 5)
    assert spec.totals == (50, 70)
    assert spec.memory_batch_sizes == (1, 2, 4) and spec.max_batch_size == 4


def test_real_run_replayed_by_the_simulator(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    target = tiny_llama(0, num_layers=4, hidden_size=64, quiet_layers_from=2, quiet_scale=0.05)
    draft = layer_truncated_copy(target, 2)
    backend = TransformersTarget(target)
    source = PromptSource(64, 5)
    prompts = [[source.take(12), source.take(12)], [source.take(12)]]
    real = run_real(backend, partial(TransformersDraft, draft), prompts, 16, 4, 2)
    assert real.clients == (0, 0, 1)
    for output, client_prompts in zip(
        real.outputs, [prompts[0][0], prompts[0][1], prompts[1][0]], strict=True
    ):
        assert output == target_greedy_decode(backend, client_prompts, 16)  # lossless
    assert len({r.arrival_s for r in real.records}) == 1  # common start
    assert link_rtt_ms(real) > 0
    trace = write_trace(real, tmp_path / "trace.jsonl")
    rows = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [(r["drafter_id"], r["output_tokens"], r["prompt_tokens"]) for r in rows] == [
        (0, 16, 12), (0, 16, 12), (1, 16, 12)
    ]  # fmt: skip
    for row, rounds in zip(rows, real.rounds, strict=True):
        assert row["acceptance_seq"] == acceptance_seq(rounds)
    spec = scenario_grid(12, 16, 4, 2)
    from dataclasses import replace

    spec = replace(spec, warmup_runs=0, runs=1, num_random=2, num_mixed=2, num_test=6)
    result = profile_pair(
        "tiny", target, backend, spec, ("tiny-draft", lambda: TransformersDraft(draft), draft),
        draft_contexts=(12, 20, 28), num_bootstrap=20,
    )  # fmt: skip
    paths = write_profiles(result, tmp_path / "p.yaml", "test")
    sim = simulate_run(trace, paths[0], paths[1], link_rtt_ms(real), 2, 4, 2)
    assert [r.num_output_tokens for r in sim] == [16, 16, 16]
    cmp = compare(real, sim, 1.0)
    assert cmp.real == summarize_records(real.records)
    # same acceptance replayed: AAL agrees up to the last round's window cap
    assert cmp.sim.aal == pytest.approx(cmp.real.aal, rel=0.2)
    assert "| AAL (accepted/round) |" in cmp.table()


@pytest.mark.slow  # ~30 s on 2 cores: profiles a synthetic 8-layer pair, then both runs
def test_edgespec_calibrate_end_to_end(tmp_path: Path) -> None:
    assert main(["calibrate", "--out", str(tmp_path), "--threads", "1", "--requests", "1"]) == 0
    text = (tmp_path / "comparison.md").read_text()
    assert "| TPOT (ms) |" in text and (tmp_path / "profile-draft.yaml").is_file()


def test_a_failing_drafter_process_is_reported() -> None:
    backend = TransformersTarget(tiny_llama(0, num_layers=1, hidden_size=32))
    prompts: list[list[tuple[int, ...]]] = [[(5, 6, 7)], [(8, 9)]]
    with pytest.raises(RuntimeError, match=r"drafter process 0: ValueError: invalid literal"):
        run_real(backend, partial(int, "not a draft"), prompts, 4, 2, 2, timeout_s=120)


def test_an_out_holding_an_earlier_calibration_is_refused_and_a_given_profile_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default folder was one fixed runs/calibration: each run wrote over the last."""
    import argparse

    from edgespec.calibration.folder import calibration_folder

    for name in ("profile.yaml", "profile-draft.yaml", "trace.jsonl", "comparison.md"):
        (tmp_path / name).write_text("earlier")
    assert main(["calibrate", "--out", str(tmp_path), "--threads", "1"]) == 2
    assert capsys.readouterr().err.startswith(
        f"edgespec calibrate: --out {tmp_path} already holds a run (comparison.md, "
        "profile-draft.yaml, profile.yaml, trace.jsonl); give another folder, or --overwrite"
    )
    args = argparse.Namespace(
        out=tmp_path, overwrite=True, resume=False, profile=str(tmp_path / "profile.yaml")
    )
    assert calibration_folder(args) == tmp_path
    assert sorted(p.name for p in tmp_path.iterdir()) == ["profile-draft.yaml", "profile.yaml"]


@pytest.mark.parametrize(
    ("clients", "message"),
    [
        ("257", "must be <= 256 (each client is a process), got 257"),
        ("100000", "must be <= 256 (each client is a process), got 100000"),
    ],
)
def test_clients_over_256_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], clients: str, message: str
) -> None:
    """Was unbounded: each client is a spawned drafter process, and the profiling grid
    measured batches of --clients prompts."""
    import argparse

    from edgespec.calibration.command import add_arguments

    with pytest.raises(SystemExit) as stop:
        main(["calibrate", "--out", str(tmp_path / "c"), "--clients", clients])
    assert stop.value.code == 2
    assert capsys.readouterr().err.endswith(f"error: argument --clients: {message}\n")
    assert not (tmp_path / "c").exists()
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert parser.parse_args(["--clients", "256"]).clients == 256
