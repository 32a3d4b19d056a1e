"""A shard folder of one kind given where another is taken is refused in one line saying
what it holds and what reads it (a `train text-shards` folder as `train draft
--train-data-dir` was refused as "the target's vocabulary size not recorded"), and a
folder that holds a model is never written shards into (`train text-shards --out DRAFT`
wrote shards and a record beside the draft's files). Each refusal comes before the
target, or the tokenizer, loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.models import loading
from tests.learn.drafts.test_shard_manifest import _args, _trained
from tests.learn.drafts.test_text_shards import _command
from tests.models.tiny import VOCAB, tiny_draft

TEXT_SHARDS = (
    "holds shards of texts without the target's labels (written by `train text-shards "
    "--out`, read by `train feature-draft --data-dir` only), not of "
)
LABELLED = "the target's continuations or the target's labels of texts"
HOLDS_A_DRAFT = (
    "holds a trimmed draft (trimmed_vocab.json), not shards: shards are written into a "
    "folder of their own; give a new {flag}"
)


def _never(*args: object, **kwargs: object) -> None:
    raise AssertionError("the target was loaded although a folder was refused")


def _folder_contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.usefixtures("prompts")
@pytest.mark.parametrize(
    ("flag", "extra", "wanted"),
    [
        ("--train-data-dir", (), LABELLED),
        ("--data-dir", ("--skip-generate",), LABELLED),
        ("--data-dir", (), "the target's continuations"),
        ("--text-data-dir", (), "the target's labels of texts"),
    ],
)
def test_a_text_shards_folder_given_to_train_draft_is_named_as_one(
    target_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flag: str,
    extra: tuple[str, ...],
    wanted: str,
) -> None:
    text = tmp_path / "text"
    assert _command(monkeypatch, target_dir, text, "--max-tokens", "64") == 0
    monkeypatch.setattr(loading, "load_model", _never)
    capsys.readouterr()
    folders = {"--data-dir": tmp_path / "data", flag: text}
    args = _trained(target_dir, folders["--data-dir"], tmp_path / "out", *extra)
    if flag != "--data-dir":
        args += [flag, str(text)]
    assert main(args) == 2
    shown = f"edgespec train draft: {flag} '{text}' {TEXT_SHARDS}{wanted}\n"
    assert capsys.readouterr().err == shown
    assert not (tmp_path / "out").exists()


@pytest.mark.usefixtures("prompts")
def test_distillation_shards_given_to_text_shards_are_named_as_such(
    target_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Were refused as "--conversations not recorded there" and so on, one per setting."""
    data = tmp_path / "data"
    assert main(_args(target_dir, data, tmp_path / "out")) == 0
    before = _folder_contents(data)
    capsys.readouterr()
    assert _command(monkeypatch, target_dir, data, loads=False) == 2
    assert capsys.readouterr().err == (
        f"edgespec train text-shards: --out '{data}' holds shards of the target's continuations "
        "(written by `train draft --data-dir`, read by `train draft --data-dir`, "
        "`--train-data-dir` and `train feature-draft --data-dir`), not of texts without the "
        "target's labels\n"
    )
    assert _folder_contents(data) == before


def test_text_shards_are_never_written_into_a_draft_folder(
    target_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Were written beside the draft's files, with a record, exit 0."""
    draft = tmp_path / "draft"
    tiny_draft(list(range(3, VOCAB))).save(draft)
    before = _folder_contents(draft)
    capsys.readouterr()
    assert _command(monkeypatch, target_dir, draft, loads=False) == 2
    shown = HOLDS_A_DRAFT.format(flag="--out")
    assert capsys.readouterr().err == f"edgespec train text-shards: --out '{draft}' {shown}\n"
    assert _folder_contents(draft) == before


@pytest.mark.usefixtures("prompts")
@pytest.mark.parametrize("flag", ["--data-dir", "--text-data-dir"])
def test_train_draft_writes_no_shards_into_a_draft_folder(
    target_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flag: str,
) -> None:
    """Were generated beside the draft's files after the target loaded; shards only read
    (--train-data-dir) may lie anywhere."""
    draft = tmp_path / "draft"
    tiny_draft(list(range(3, VOCAB))).save(draft)
    before = _folder_contents(draft)
    monkeypatch.setattr(loading, "load_model", _never)
    capsys.readouterr()
    data = draft if flag == "--data-dir" else tmp_path / "data"
    args = _args(target_dir, data, tmp_path / "out")
    if flag == "--text-data-dir":
        args += [flag, str(draft)]
    assert main(args) == 2
    shown = HOLDS_A_DRAFT.format(flag=flag)
    assert capsys.readouterr().err == f"edgespec train draft: {flag} '{draft}' {shown}\n"
    assert _folder_contents(draft) == before


@pytest.mark.parametrize(
    ("files", "held"),
    [
        (("config.json", "model.safetensors", "trimmed_vocab.json"), "a trimmed draft "
         "(trimmed_vocab.json)"),
        (("config.json", "model.safetensors"), "a model (config.json)"),
        (("model.safetensors",), "model weights (model.safetensors)"),
    ],
)  # fmt: skip
def test_a_features_dir_holding_a_saved_model_is_refused(
    tmp_path: Path, files: tuple[str, ...], held: str
) -> None:
    """Was accepted: `train feature-draft` wrote its features beside the draft's files."""
    from edgespec.errors import UserInputError
    from edgespec.learn.drafts.shard_kinds import check_features_apart

    folder = tmp_path / "draft"
    folder.mkdir()
    for name in files:
        (folder / name).write_text("{}")
    with pytest.raises(UserInputError) as refused:
        check_features_apart(folder, [tmp_path / "shards"])
    assert str(refused.value) == (
        f"--features-dir {str(folder)!r} holds {held}, not features: features are written into "
        "a folder of their own; give a new --features-dir"
    )
