"""``edgespec calibrate``'s refusals come before anything loads or runs and leave nothing
behind: a ``--profile`` whose file or ``-draft`` file is missing or bad, or that is no
.yaml or .yml file, a pair it cannot build, a prompt beyond the target's context; no
``--out`` or ``runs/calibration-<time>`` folder is made for them. ``--overwrite`` keeps
every file of a ``--profile`` given in ``--out``."""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path

import pytest

from edgespec.calibration.checks import GivenProfile, check_profiles
from edgespec.cli import main

WISP = "kind: wisp\na_s: 0.0\nb_compute_s: 0.0\nb_read_s: 0.0\nc_s: 0.02\n"
"""A valid WISP profile, of no model named (refused by calibrate once the rest passes)."""

ZHU = "kind: zhu\nmodel: llama2-7b\nflops: printed\nc1_s_per_flop: 2.08e-14\nc2_s: 1.28e-2\n"
"""A valid Zhu profile."""


def wisp_of(model: str) -> str:
    """A valid WISP profile of ``model``, as edgespec profile or calibrate records it."""
    return f"model: {model}\n{WISP}"


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (  # was the whole run (link, real run), then a scenario field's error
            {},
            "--profile p.yaml: p.yaml: file not found",
        ),
        (
            {"p.yaml": WISP},
            "--profile p.yaml: p-draft.yaml: file not found (the draft's profile, read "
            "beside --profile)",
        ),
        (
            {"p.yaml": WISP, "p-draft.yaml": "kind: wisp\na_s: 0.0\n"},
            "--profile p.yaml: p-draft.yaml.b_compute_s: required field is missing (the "
            "draft's profile, read beside --profile)",
        ),
        (
            {"p.yaml": "- a list\n", "p-draft.yaml": WISP},
            "--profile p.yaml: p.yaml: top level must be a mapping, got list",
        ),
        (  # was run as kind: wisp, refused by the simulator after the real measurement
            {"p.yaml": WISP, "p-draft.yaml": ZHU},
            "--profile p.yaml: p-draft.yaml: a 'zhu' profile (the draft's profile, read "
            "beside --profile); the simulated run prices with 'wisp' profiles, as edgespec "
            "profile writes them",
        ),
    ],
)
def test_a_profile_missing_or_bad_is_refused_before_anything_loads(
    cheap: Path, capsys: pytest.CaptureFixture[str], files: dict[str, str], message: str
) -> None:
    for name, text in files.items():
        (cheap / name).write_text(text)
    argv = ["calibrate", "--profile", "p.yaml", "--clients", "1", "--requests", "1"]
    assert main([*argv, "--threads", "1", "--out", "c"]) == 2
    assert capsys.readouterr() == ("", f"edgespec calibrate: {message}\n")
    assert sorted(p.name for p in cheap.iterdir()) == sorted(files)


@pytest.mark.parametrize("out", [None, "c"], ids=["default folder", "--out"])
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--prompt-tokens", "5000"],
            "--prompt-tokens (5,000 tokens) + --max-new-tokens (48) exceeds the target's "
            "context of 4,096 tokens",
        ),
        (
            ["--target", "nomodel"],
            "--target nomodel: unknown model 'nomodel': known names are gemma3-270m, "
            "gemma3-270m-draft, or give a path to a local Hugging Face model directory or "
            ".gguf file",
        ),
        (  # was resolved only after the target had loaded
            ["--target", "gemma3-270m", "--draft", "nomodel"],
            "--draft nomodel: unknown model 'nomodel': known names are gemma3-270m, "
            "gemma3-270m-draft, or give a path to a local Hugging Face model directory or "
            ".gguf file",
        ),
        (  # was ignored: the synthetic target's truncated draft ran instead
            ["--draft", "nomodel"],
            "--draft nomodel: the synthetic target takes 'truncated' or 'ngram' (a model "
            "draft needs a model --target)",
        ),
        (  # was ignored: random prompts ran instead
            ["--dataset", "cnndm"],
            "--dataset cnndm: the synthetic target's prompts are random tokens "
            "(--prompt-tokens); a dataset needs a model --target",
        ),
        (  # was ignored: the dataset's prompts ran at their own lengths
            ["--target", "gemma3-270m", "--prompt-tokens", "40"],
            "--prompt-tokens 40: a model target's prompts come from --dataset (default "
            "gsm8k); --prompt-tokens sizes the synthetic target's",
        ),
        (  # was a ValueError traceback after the target had loaded
            ["--target", "gemma3-270m", "--dataset", "nope"],
            "--dataset nope: unknown; known datasets are gsm8k, cnndm, humaneval, sharegpt, "
            "general",
        ),
    ],
)
def test_a_refusal_leaves_no_folder(
    cheap: Path,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    message: str,
    out: str | None,
) -> None:
    """The folder was made before the pair loaded: each refusal left it, empty."""
    where = [] if out is None else ["--out", out]
    assert main(["calibrate", "--threads", "1", *flags, *where]) == 2
    assert capsys.readouterr() == ("", f"edgespec calibrate: {message}\n")
    assert list(cheap.iterdir()) == []


def test_overwrite_keeps_the_earlier_run_when_a_later_check_refuses(
    cheap: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--overwrite removed the earlier run's files when it claimed the folder, before the
    context check that needs the loaded target refused the run."""
    from edgespec.runtime.testing import tiny_llama

    monkeypatch.setattr("edgespec.runtime.testing.tiny_llama", partial(tiny_llama, num_layers=1))
    earlier = {"profile.yaml": "earlier", "trace.jsonl": "earlier", "comparison.md": "earlier"}
    (cheap / "c").mkdir()
    for name, text in earlier.items():
        (cheap / "c" / name).write_text(text)
    argv = ["calibrate", "--threads", "1", "--out", "c", "--overwrite"]
    assert main([*argv, "--prompt-tokens", "5000"]) == 2
    assert capsys.readouterr().err == (
        "edgespec calibrate: --prompt-tokens (5,000 tokens) + --max-new-tokens (48) exceeds "
        "the target's context of 4,096 tokens\n"
    )
    assert {p.name: p.read_text() for p in (cheap / "c").iterdir()} == earlier


TAKEN = "; a profile is a .yaml or .yml file"
"""How a --profile of another kind ends its refusal (the simulator's words too)."""


@pytest.mark.parametrize(
    ("profile", "what"),
    [
        ("small.jsonl", f"a .jsonl file{TAKEN}"),  # was: no hardware/profiles preset named ...
        ("gone.json", "file not found"),  # was: a .json file
        ("folder", f"a folder{TAKEN}"),
        ("bare", f"a file without a suffix{TAKEN}"),
        ("sub/p", "file not found"),  # was: a path without a suffix
        ("nope", "file not found"),  # was: nope: no hardware/profiles preset named 'nope'; ...
    ],
)
def test_a_profile_path_not_ending_in_yaml_is_refused_for_what_it_is(
    cheap: Path, capsys: pytest.CaptureFixture[str], profile: str, what: str
) -> None:
    (cheap / "small.jsonl").write_text('{"a": 1}\n')
    (cheap / "bare").write_text(WISP)
    (cheap / "folder").mkdir()
    before = sorted(p.name for p in cheap.iterdir())
    argv = ["calibrate", "--profile", profile, "--clients", "1", "--requests", "1"]
    assert main([*argv, "--threads", "1", "--out", "c"]) == 2
    assert capsys.readouterr() == ("", f"edgespec calibrate: --profile {profile}: {what}\n")
    assert sorted(p.name for p in cheap.iterdir()) == before


@pytest.mark.parametrize("preset", ["a100-qwen3-32b", "rtx3080-tinyllama-1.1b-zhu"])
def test_a_bundled_preset_is_refused_for_its_missing_draft_profile(
    cheap: Path, capsys: pytest.CaptureFixture[str], preset: str
) -> None:
    """A preset's draft was looked up as the preset ``NAME-draft``, which none is (presets
    pair with no draft profile): ``--profile a100-qwen3-32b: a100-qwen3-32b-draft: no
    hardware/profiles preset named ...`` and all ten names; the preset with a dot in its
    name was refused as ``a .1b-zhu file``."""
    argv = ["calibrate", "--profile", preset, "--clients", "1", "--requests", "1"]
    assert main([*argv, "--threads", "1", "--out", "c"]) == 2
    assert capsys.readouterr() == (
        "",
        f"edgespec calibrate: --profile {preset}: a bundled preset, and no draft profile is "
        f"paired with one (there is no {preset}-draft); give a profile file, DIR/NAME.yaml, "
        "with the draft's beside it as DIR/NAME-draft.yaml (edgespec profile --out "
        "DIR/NAME.yaml writes both)\n",
    )
    assert list(cheap.iterdir()) == []


def test_a_yml_profile_is_read_with_its_yml_draft(
    cheap: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """edgespec profile --out p.yml writes p-draft.yml: calibrate looked for p-draft.yaml."""
    (cheap / "p.yml").write_text(wisp_of("synthetic"))
    argv = ["calibrate", "--profile", "p.yml", "--clients", "1", "--requests", "1"]
    assert main([*argv, "--threads", "1", "--out", "c"]) == 2
    assert capsys.readouterr().err == (
        "edgespec calibrate: --profile p.yml: p-draft.yml: file not found (the draft's "
        "profile, read beside --profile)\n"
    )
    (cheap / "p-draft.yml").write_text(wisp_of("truncated"))
    args = argparse.Namespace(profile="p.yml", target="synthetic", draft="truncated")
    assert check_profiles(args) == GivenProfile(
        Path("p.yml"), Path("p-draft.yml"), "synthetic", "truncated"
    )  # fmt: skip


def test_overwrite_keeps_every_file_of_the_profile_given(
    cheap: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--overwrite with --profile DIR/profile.yaml --out DIR kept profile.yaml and its
    draft but removed profile-report.json (and profile-zhu.yaml), that profile's fit."""
    from edgespec.runtime.testing import tiny_llama

    monkeypatch.setattr("edgespec.runtime.testing.tiny_llama", partial(tiny_llama, num_layers=1))
    profile = {"profile.yaml": wisp_of("synthetic"), "profile-draft.yaml": wisp_of("truncated"),
               "profile-report.json": "{}", "profile-zhu.yaml": "zhu"}  # fmt: skip
    (cheap / "c").mkdir()
    for name, text in {**profile, "trace.jsonl": "earlier", "comparison.md": "earlier"}.items():
        (cheap / "c" / name).write_text(text)
    argv = ["calibrate", "--threads", "1", "--out", "c", "--overwrite", "--clients", "1"]
    with pytest.raises(AssertionError, match="calibrate went on past its checks"):
        main([*argv, "--requests", "1", "--profile", "c/profile.yaml"])  # stops at the run
    assert {p.name: p.read_text() for p in (cheap / "c").iterdir()} == profile
