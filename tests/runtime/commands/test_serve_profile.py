"""``edgespec serve --profile`` checked against what it serves, before the target loads:
a drafter's profile and another model's are refused naming the file and field, and one
used beyond the batch size or context it measured is said once."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.config import PolicySpec
from edgespec.runtime.commands.serve_profile import check_profile
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
    fields = "role: target\nmodel: m\nmeasured_max_batch_size: 6\nmeasured_max_context_tokens: 96\n"
    path = _profile(tmp_path, fields)
    batching = PolicySpec("wisp", {"profile": str(path)})
    said: list[str] = []
    check_profile(ServerConfig(target="m", batching=batching, max_batch_size=6,
                               kv_budget_tokens=96), said.append)  # fmt: skip
    assert said == []
    check_profile(ServerConfig(target="m", batching=batching), said.append)
    assert said == [
        f"warning: profile {path} is used for batches of up to 16 (measured up to 6) and "
        "contexts of up to 65536 tokens (measured up to 96): its times there are "
        "extrapolated; profile a grid that covers them"
    ]
