"""``edgespec serve --profile`` checked against what it serves, before the target loads:
a drafter's profile and another model's are refused naming the file and field; one used
beyond the batch size or context it measured is said once the target is loaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.config import PolicySpec
from edgespec.runtime.commands.serve_profile import profile_range_warning
from edgespec.runtime.server.config import ServerConfig

COEFFICIENTS = "a_s: 1.0e-5\nb_compute_s: 0.0\nb_read_s: 1.0e-7\nc_s: 1.0e-3\n"


def _profile(tmp_path: Path, fields: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(f"kind: wisp\n{fields}{COEFFICIENTS}")
    return path


def _serve(profile: Path, target: str = "some-model") -> list[str]:
    return ["serve", "--target", target, "--batching", "wisp", "--profile", str(profile)]


def test_a_drafters_profile_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _profile(tmp_path, "role: draft\nmodel: some-model\n")
    assert main(_serve(path)) == 2
    assert capsys.readouterr().err.strip() == (
        f"edgespec serve: --profile: {path}.role: is 'draft' (a drafter's cost per propose "
        "call), but a server's wisp batching needs a 'target' profile (NAME.yaml, not "
        "NAME-draft.yaml)"
    )


def test_another_models_profile_is_refused_with_the_way_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _profile(tmp_path, "role: target\nmodel: /models/big\n")
    assert main(_serve(path, "/models/small")) == 2
    assert capsys.readouterr().err.strip() == (
        f"edgespec serve: --profile: {path}.model: is /models/big, not the served target "
        "/models/small: another model's profile mis-prices every batch; profile this target "
        "(edgespec profile --target /models/small), or, to use these times anyway, give its "
        "coefficients instead (--set batching.params.a_s=... with b_compute_s, b_read_s and "
        "c_s, without --profile)"
    )


def test_the_profile_of_the_target_is_said_when_used_beyond_its_range(tmp_path: Path) -> None:
    """Said once the target is loaded, of the longest context a request can reach: the
    target's, or the KV budget when smaller (it said the KV budget, 65,536 by default, of
    a target whose context is 32,768)."""
    fields = "role: target\nmodel: m\nmeasured_max_batch_size: 6\nmeasured_max_context_tokens: 96\n"
    path = _profile(tmp_path, fields)
    batching = PolicySpec("wisp", {"profile": str(path)})
    within = ServerConfig(target="m", batching=batching, max_batch_size=6, kv_budget_tokens=96)
    assert profile_range_warning(within, 4096) is None
    assert profile_range_warning(ServerConfig(target="m", batching=batching), 4096) == (
        f"warning: profile {path} is used for batches of up to 16 (measured up to 6) and "
        "contexts of up to 4096 tokens (measured up to 96): its times there are "
        "extrapolated; profile a grid that covers them"
    )
    budget = ServerConfig(target="m", batching=batching, max_batch_size=6, kv_budget_tokens=512)
    assert profile_range_warning(budget, 32768) == (
        f"warning: profile {path} is used for contexts of up to 512 tokens (measured up to "
        "96): its times there are extrapolated; profile a grid that covers them"
    )


@pytest.mark.timeout(120)
def test_serve_says_it_once_its_target_is_loaded(tmp_path: Path) -> None:
    import re
    import signal

    from edgespec.runtime.testing import tiny_llama
    from tests.runtime.commands.processes import Command
    from tests.word_tokenizer import make_word_tokenizer

    target = tmp_path / "target"
    tiny_llama(seed=1).save_pretrained(target)
    make_word_tokenizer(64).save_pretrained(target)
    fields = f"role: target\nmodel: {target}\nmeasured_max_batch_size: 1\n"
    fields += "measured_max_context_tokens: 8\n"
    command = Command([*_serve(_profile(tmp_path, fields), str(target)), "--port", "0"],
                      tmp_path / "err")  # fmt: skip
    try:
        command.wait_for(r"listening on", stdout=True)
        said = [line for line in command.lines if "is used for" in line]
        context = int(re.findall(r"contexts of up to (\d+) tokens", said[0])[0])
        assert len(said) == 1 and 8 < context < 65536  # the target's context, not the KV budget
    finally:
        command.process.send_signal(signal.SIGINT)
        command.stopped(timeout_s=60)
