"""``edgespec serve`` names each start-up stage on stderr as it starts (a second start
finds the mask probe cached and says so) while stdout's first line stays the address it
listens on, and the stage lines' timing format."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from tests.runtime.commands.processes import Command


def test_serve_says_each_start_up_stage_on_stderr(tmp_path: Path, target_model: Any) -> None:
    """A first load is minutes of work: serve names each stage as it starts (stderr), and
    stdout's first line is still the address it listens on. The second start finds the
    mask probe's pass recorded (in its own EDGESPEC_CACHE), says so, and warms the target up
    instead (the probes' passes did the first time)."""
    from edgespec.runtime.commands.stages import Stages

    model_dir = tmp_path / "model"
    target_model.save_pretrained(model_dir)
    args = ["serve", "--target", str(model_dir), "--port", "0", "--draft", "ngram"]
    args += ["--threads", "1"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "EDGESPEC_CACHE": str(tmp_path / "cache")}
    said = []
    for start in range(2):
        command = Command(args, tmp_path / f"stderr-{start}", env=env)
        try:
            command.wait_for("listening on 127.0.0.1:", stdout=True)
            assert command.out.read_text().startswith("edgespec serve: listening on ")
            command.process.send_signal(signal.SIGTERM)
            command.stopped(20)
        finally:
            command.kill()
        said.append([line.split("] ", 1)[1] for line in command.lines if "s] " in line])
    expected = [
        f"loading the target {model_dir} ...",
        "probing the target's attention masks and checking batched against one-at-a-time "
        "logits (exact numerics; cached for later starts; no pass recorded for these weight "
        "files) ...",
        "loading the draft ngram ...",
        "starting the gRPC server ...",
        "ready",
    ]
    assert said[0][:5] == expected
    expected[1] = (
        "attention masks and batch invariance: checked before for these weights, versions, "
        "device, CPU, threads and numerics (cached) ..."
    )
    expected.insert(2, "warming up the target (one prefill of 8 tokens, one decode step) ...")
    assert said[1][:6] == expected
    ticks = iter([10.0, 10.0, 12.5, 70.25])
    stages = Stages("serve", clock=lambda: next(ticks))
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        stages("a")
        stages("b")
        stages.done()
    lines = err.getvalue().splitlines()
    assert lines == [
        "edgespec serve: [  0.0 s] a ...",
        "edgespec serve: [  2.5 s] b ...",
        "edgespec serve: [ 60.2 s] ready",
    ]


def test_the_probes_passes_are_said_one_each_5_s_at_most() -> None:
    """A first start's probe (523 one-token passes for Gemma 3) was one silent stage of
    minutes: a line each 5 s at most, none in its first 5 s nor at its last pass (the next
    stage's line follows)."""
    from edgespec.runtime.commands.serve_target import ProbeLines

    now = [0.0]
    said: list[str] = []
    lines = ProbeLines(said.append, clock=lambda: now[0])
    for done, at_s in [(1, 0.5), (2, 4.0), (3, 5.6), (4, 6.0), (5, 10.7), (6, 30.0)]:
        now[0] = at_s
        lines(done, 6)
    assert said == ["probing: 3 of 6 one-token passes", "probing: 5 of 6 one-token passes"]
