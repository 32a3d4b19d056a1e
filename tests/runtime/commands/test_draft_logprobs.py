"""``edgespec draft --logprobs N``: after the text, a line per output token with its
log-probability under the target's raw row and its N likeliest tokens', as the server's
verifications return them (the endpoint's ``logprobs``), or, ``--mode centralized``, its
``Generate`` chunks; refused where nothing returns them (a fused run, ``--compare``) and,
with ``--serve-openai``, as a request's own field."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from edgespec.cli import main
from edgespec.runtime.backends.base import ForwardItem
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.conftest import ServerFactory

PROMPT = (1, 5, 9, 2, 7)
NONE_FUSED = ("the log-probabilities come with a distributed or centralized run's tokens (no "
              "--compare): a fused run returns none")  # fmt: skip


def _log_softmax(row: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    shifted = row.astype(np.float64) - row.max()
    return np.asarray(shifted - np.log(np.exp(shifted).sum()), dtype=np.float64)


@pytest.mark.parametrize("mode", ["distributed", "centralized"])
def test_each_output_token_gets_its_line(
    make_server: ServerFactory,
    target: TransformersTarget,
    capsys: pytest.CaptureFixture[str],
    mode: str,
) -> None:
    server = make_server()
    argv = ["draft", "--server", f"127.0.0.1:{server.port}", "--draft", "ngram",
            "--prompt-ids", ",".join(map(str, PROMPT)), "--max-new-tokens", "6",
            "--logprobs", "2", "--mode", mode]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    output = target_greedy_decode(target, PROMPT, 6)
    header = out.index("logprobs: token, log-probability under the target, the likeliest tokens'")
    lines = out[header + 1 :]
    assert len(lines) == len(output)
    for j, (token, line) in enumerate(zip(output, lines, strict=True)):
        context = (*PROMPT, *output[:j])
        row = _log_softmax(target.forward([ForwardItem(None, 0, context, 1)])[0].logits[0])
        best = np.argsort(-row, kind="stable")[:2]
        top = ", ".join(f"{t} {row[t]:.4f}" for t in best)
        assert line == f"  {token} {row[token]:.4f}  | {top}"


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--mode", "fused"], f"--logprobs: {NONE_FUSED}"),
        (["--compare"], f"--logprobs: {NONE_FUSED}"),
        (["--logprobs", "21"], "--logprobs: must be in [0, 20], got 21"),
        (["--serve-openai", "0"], "--logprobs 1: the endpoint (--serve-openai) takes each "
         "request's own logprobs; drop --logprobs"),
    ],
)  # fmt: skip
def test_where_nothing_returns_them_they_are_refused(
    flags: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["draft", "--server", "127.0.0.1:1", "--draft", "ngram", "--logprobs", "1"]
    prompt = [] if "--serve-openai" in flags else ["--prompt-ids", "5,6"]
    assert main([*argv, *prompt, *flags]) == 2
    assert capsys.readouterr().err.strip().endswith(f"edgespec draft: {said}")
