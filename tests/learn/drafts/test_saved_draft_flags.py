"""A saved trimmed draft given to `edgespec train draft --init-from` or `edgespec train
feature-draft --kept-from` is checked by the model registry before it loads: a save cut
off before its marker, or a directory holding another model, is one line naming the flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.models import loading
from tests.learn.traces.test_checks import cut_off_draft
from tests.models.tiny import tiny_target

CUT_OFF = (
    "{flag}: model directory '{path}' holds a trimmed draft without its trimmed_vocab.json: "
    "its save was cut off before it finished; save or train the draft again"
)
NOT_TRIMMED = (
    "{flag} '{path}' holds no trimmed draft (no trimmed_vocab.json); give a directory "
    "`edgespec train draft` saved"
)


def _saved(kind: str, directory: Path) -> Path:
    """A trimmed draft cut off before its marker, or a whole model that is no trimmed draft."""
    if kind == "cut-off":
        return cut_off_draft(directory)
    tiny_target().save_pretrained(directory)
    return directory


def _never(*args: object, **kwargs: object) -> None:
    raise AssertionError("the target was loaded before the saved draft was checked")


@pytest.mark.parametrize(("kind", "message"), [("cut-off", CUT_OFF), ("other", NOT_TRIMMED)])
def test_train_draft_checks_its_init_from_draft(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    message: str,
) -> None:
    """Was loaded without the registry's check (a cut-off draft's weights were trained on),
    after the target's slow load."""
    saved = _saved(kind, tmp_path / "saved")
    monkeypatch.setattr(loading, "load_model", _never)
    capsys.readouterr()  # the library's progress bar of the save
    args = ["train", "draft", "--skip-generate", "--init-from", str(saved), "--threads", "1"]
    assert main([*args, "--data-dir", str(tmp_path / "d"), "--out", str(tmp_path / "o")]) == 2
    shown = message.format(flag="--init-from", path=saved)
    assert capsys.readouterr().err == f"edgespec train draft: {shown}\n"
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("kind", "message"), [("cut-off", CUT_OFF), ("other", NOT_TRIMMED)])
def test_train_feature_draft_checks_its_kept_from_draft_before_the_target_loads(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    message: str,
) -> None:
    """Was loaded without the registry's check, after the target's slow load."""
    saved = _saved(kind, tmp_path / "saved")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "shard_0.pt").touch()  # never read: the draft is refused first
    monkeypatch.setattr(loading, "load_model", _never)
    capsys.readouterr()
    args = ["train", "feature-draft", "--kept-from", str(saved), "--threads", "1"]
    args += ["--features-dir", str(tmp_path / "f"), "--data-dir", str(tmp_path / "d")]
    assert main([*args, "--out", str(tmp_path / "o")]) == 2
    shown = message.format(flag="--kept-from", path=saved)
    assert capsys.readouterr().err == f"edgespec train feature-draft: {shown}\n"
    assert not (tmp_path / "f").exists()


def test_a_whole_draft_loads_even_when_spelled_like_a_known_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative directory is a path: never the bundled draft of the same name."""
    from edgespec.learn.drafts.make_draft import load_trimmed_draft
    from tests.models.tiny import tiny_draft

    tiny_draft([3, 5, 7]).save(tmp_path / "gemma3-270m-draft")
    monkeypatch.chdir(tmp_path)
    saved = load_trimmed_draft("--init-from", Path("gemma3-270m-draft"), verbose=False)
    assert saved.config.draft_token_ids == [3, 5, 7]


NO_DIRECTORY = (
    "{flag} '{path}' {what}: it takes a directory `edgespec train draft` saved (a trimmed "
    "draft), not a model name or .gguf file"
)


@pytest.mark.parametrize("exists", [True, False])
@pytest.mark.parametrize(
    ("command", "flag"),
    [(["train", "draft"], "--init-from"), (["train", "feature-draft"], "--kept-from")],
)
def test_a_gguf_file_given_for_a_saved_draft_says_what_the_flag_takes(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
    flag: str,
    exists: bool,
) -> None:
    """Said "is not a saved draft directory" (--kept-from: "is not a draft directory"),
    not what either flag takes; refused before the target loads."""
    gguf = tmp_path / "model.gguf"
    if exists:
        gguf.write_bytes(b"GGUF")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "shard_0.pt").touch()  # never read: the flag is refused first
    monkeypatch.setattr(loading, "load_model", _never)
    args = [*command, flag, str(gguf), "--data-dir", str(tmp_path / "d")]
    args += ["--out", str(tmp_path / "o")]
    if flag == "--kept-from":
        args += ["--features-dir", str(tmp_path / "f")]
    assert main(args) == 2
    what = "is not a directory" if exists else "does not exist"
    shown = NO_DIRECTORY.format(flag=flag, path=gguf, what=what)
    assert capsys.readouterr().err == f"edgespec train {command[1]}: {shown}\n"
    assert not (tmp_path / "o").exists()
