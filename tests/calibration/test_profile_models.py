"""``edgespec calibrate --profile``: its files must be of the run's pair. A profile records
the model it measured (``model:``); one of another target or draft was read silently and
the simulated run priced another pair (TPOT sim − real −78.5 %, throughput +494 %, with
nothing saying which profile it was). It is refused in one line (exit 2) before anything
loads, names compared as the models they resolve to; ``comparison.md`` names the files."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.models.registry import GEMMA3_270M_DRAFT, bundled_draft_dir
from tests.calibration.test_calibration_refusals import WISP, wisp_of

RUN = ["calibrate", "--profile", "p.yaml", "--clients", "1", "--requests", "1", "--threads", "1"]
REMEDY = "; give this pair's profile, or omit --profile to profile it here"
DRAFT_NOTE = " (the draft's profile, read beside --profile)"


def _profile(folder: Path, target: str | None, draft: str) -> None:
    """``p.yaml`` recording ``target`` (none: no ``model:``) and ``p-draft.yaml``."""
    (folder / "p.yaml").write_text(WISP if target is None else wisp_of(target))
    (folder / "p-draft.yaml").write_text(wisp_of(draft))


def _model_dir(folder: Path) -> Path:
    """A folder the registry takes as a Hugging Face model (never loaded here)."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    return folder


@pytest.mark.parametrize(
    ("recorded", "flags", "message"),
    [
        (  # the reviewer's: profiled as m/llama + ngram, run as synthetic + truncated
            ("m/llama", "ngram"),
            [],
            f"--profile p.yaml: p.yaml records model m/llama, not --target synthetic{REMEDY}",
        ),
        (
            ("synthetic", "ngram"),
            [],
            "--profile p.yaml: p-draft.yaml records model ngram, not --draft truncated"
            f"{DRAFT_NOTE}{REMEDY}",
        ),
        (
            ("m/llama", "ngram"),
            ["--target", "m/other", "--draft", "ngram"],
            f"--profile p.yaml: p.yaml records model m/llama, not --target m/other{REMEDY}",
        ),
        (  # a relative path recorded elsewhere: no model from this folder
            ("llama", "ngram"),
            ["--target", "m/llama", "--draft", "ngram"],
            "--profile p.yaml: p.yaml records model llama (no such model from here), not "
            f"--target m/llama{REMEDY}",
        ),
        (
            (None, "truncated"),
            [],
            "--profile p.yaml: p.yaml records no model name (model:), so it may be another "
            f"pair's{REMEDY}",
        ),
    ],
)
def test_a_profile_of_another_pair_is_refused_before_anything_loads(
    cheap: Path,
    capsys: pytest.CaptureFixture[str],
    recorded: tuple[str | None, str],
    flags: list[str],
    message: str,
) -> None:
    for name in ("llama", "other"):
        _model_dir(cheap / "m" / name)
    _profile(cheap, *recorded)
    assert main([*RUN, *flags, "--out", "c"]) == 2
    assert capsys.readouterr() == ("", f"edgespec calibrate: {message}\n")
    assert not (cheap / "c").exists()


@pytest.mark.parametrize(
    ("recorded", "target", "draft"),
    [
        (("./m/llama", "ngram"), "{here}/m/llama", "ngram"),
        (("m/llama", GEMMA3_270M_DRAFT), "m/llama", "{bundled}"),
    ],
    ids=["relative and absolute path", "known name and its folder"],
)
def test_a_model_spelled_otherwise_is_the_same_model(
    cheap: Path, recorded: tuple[str, str], target: str, draft: str
) -> None:
    """Names are compared as the models they resolve to: the checks pass and the run
    goes on to load the pair (which ``cheap`` stops)."""
    _model_dir(cheap / "m" / "llama")
    _profile(cheap, *recorded)
    spelled = {"here": cheap, "bundled": bundled_draft_dir(GEMMA3_270M_DRAFT)}
    flags = ["--target", target.format(**spelled), "--draft", draft.format(**spelled)]
    with pytest.raises(AssertionError, match="calibrate went on past its checks"):
        main([*RUN, *flags, "--out", "c"])


def test_comparison_md_names_the_profile_files_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole command with the synthetic pair and a --profile of it: stdout and
    comparison.md said nothing of which profile priced the simulated run."""
    monkeypatch.chdir(tmp_path)
    _profile(tmp_path, "synthetic", "truncated")
    sizes = ["--max-new-tokens", "4", "--prompt-tokens", "8"]
    assert main([*RUN, *sizes, "--out", "c"]) == 0
    line = (
        "profile: read from --profile p.yaml and p-draft.yaml (of synthetic + truncated); "
        "not profiled in this run"
    )
    said = capsys.readouterr()  # results on stdout, progress on stderr (as profile's)
    assert said.out.startswith(f"{line}\nsynthetic + truncated, 1 clients x 1 requests, γ=4")
    progress = [
        "measuring the loopback link (1 client) ...",
        "real run: 1 clients x 1 requests ...",
    ]
    assert [one for one in said.err.splitlines() if one in progress] == progress
    lines = (tmp_path / "c" / "comparison.md").read_text().splitlines()
    assert lines[0].startswith("synthetic + truncated, 1 clients x 1 requests, γ=4")
    assert lines[1:3] == [line, ""]


def test_a_profile_used_beyond_what_it_measured_is_warned_of(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``--profile`` measured on smaller batches and contexts than the run's was read
    in silence, its times extrapolated (``edgespec sim`` says so of the same file): said
    once per file on stderr, as the simulator says it, and kept in comparison.md."""
    monkeypatch.chdir(tmp_path)
    measured = "measured_max_batch_size: 1\nmeasured_max_context_tokens: 10\n"
    (tmp_path / "p.yaml").write_text(wisp_of("synthetic") + measured)
    (tmp_path / "p-draft.yaml").write_text(wisp_of("truncated") + measured)
    sizes = ["--max-new-tokens", "4", "--prompt-tokens", "8", "--clients", "2"]
    assert main([*RUN[:3], "--requests", "1", "--threads", "1", *sizes, "--out", "c"]) == 0
    target = (
        "warning: profile p.yaml is used for batches of up to 2 (measured up to 1) and contexts "
        "of up to 12 tokens (measured up to 10): its times there are extrapolated; profile a "
        "grid that covers them"
    )
    draft = (
        "warning: profile p-draft.yaml is used for contexts of up to 12 tokens (measured up to "
        "10): its times there are extrapolated; profile a grid that covers them"
    )
    warnings = f"edgespec calibrate: {target}\nedgespec calibrate: {draft}\n"
    progress = "measuring the loopback link (1 client) ...\nreal run: 2 clients x 1 requests ...\n"
    assert capsys.readouterr().err == warnings + progress
    lines = (tmp_path / "c" / "comparison.md").read_text().splitlines()
    assert lines[2:5] == [target, draft, ""]
