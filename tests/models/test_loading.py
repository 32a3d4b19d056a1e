"""The one model loader: dtype names, local directories with and without a tokenizer."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from edgespec.models.loading import (  # noqa: E402
    DTYPE_NAMES,
    load_model,
    load_tokenizer,
    torch_dtype,
)
from edgespec.models.registry import BrokenModelError, ModelNotFoundError  # noqa: E402
from edgespec.runtime.testing import tiny_llama  # noqa: E402


def test_dtype_names_map_to_torch_dtypes() -> None:
    assert [torch_dtype(name) for name in DTYPE_NAMES] == [
        torch.float32,
        torch.bfloat16,
        torch.float16,
    ]
    with pytest.raises(ValueError, match=r"dtype must be one of .*got 'int8'"):
        torch_dtype("int8")


def test_a_directory_without_a_tokenizer_loads_in_the_asked_dtype(tmp_path: Path) -> None:
    model = tiny_llama(seed=0)
    model.save_pretrained(str(tmp_path / "m"))
    loaded = load_model(str(tmp_path / "m"), dtype="bfloat16")
    assert loaded.tokenizer is None
    assert not loaded.model.training
    assert next(loaded.model.parameters()).dtype == torch.bfloat16
    plain = load_model(str(tmp_path / "m"))
    ids = torch.tensor([[3, 4, 5]])
    with torch.no_grad():
        assert torch.equal(plain.model(input_ids=ids).logits, model(input_ids=ids).logits)
    assert load_tokenizer(str(tmp_path / "m")) is None
    with pytest.raises(ModelNotFoundError, match="model 'm' has no tokenizer"):
        load_model(str(tmp_path / "m"), require_tokenizer=True)


def test_a_model_is_placed_on_the_asked_device_in_the_asked_dtype(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The move itself, without a GPU: torch's ``meta`` device (the device check, which
    knows only cpu and cuda, is what the next test covers)."""
    tiny_llama(seed=0).save_pretrained(str(tmp_path / "m"))
    assert next(load_model(str(tmp_path / "m")).model.parameters()).device.type == "cpu"
    monkeypatch.setattr("edgespec.models.loading.check_device_available", lambda device: None)
    loaded = load_model(str(tmp_path / "m"), dtype="float16", device="meta")
    assert {(p.device.type, p.dtype) for p in loaded.model.parameters()} == {
        ("meta", torch.float16)
    }
    assert not loaded.model.training


def test_cuda_without_cuda_fails_before_any_weight_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from edgespec.errors import UserInputError

    tiny_llama(seed=0).save_pretrained(str(tmp_path / "m"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)

    def read(*args: object, **kwargs: object) -> None:
        raise AssertionError("weights read before the device was checked")

    monkeypatch.setattr("transformers.AutoModelForCausalLM.from_pretrained", read)
    with pytest.raises(UserInputError) as info:
        load_model(str(tmp_path / "m"), device="cuda:0")
    assert str(info.value).startswith(
        "--device cuda:0: CUDA is not available to this torch (torch "
    )


def _cut_off_trimmed_draft(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A trimmed draft at ``path`` whose save stopped before its marker (the disk filled)."""
    from tests.disk_full import disk_full_writing
    from tests.models.tiny import tiny_draft

    with monkeypatch.context() as full:
        disk_full_writing(full, "trimmed_vocab.json")
        with pytest.raises(OSError, match="No space left on device"):
            tiny_draft(list(range(3, 40))).save(path)


def _cut_off(path: Path) -> str:
    return (
        f"model directory '{path}' holds a trimmed draft without its trimmed_vocab.json: "
        "its save was cut off before it finished; save or train the draft again"
    )


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads /proc/self/fd")
def test_a_draft_whose_save_was_cut_off_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not the library's "model type `edgespec_trimmed_draft` ... does not recognize this
    architecture"; a feature draft cut off before its config likewise."""
    from edgespec.models.feature_draft import save_feature_draft
    from tests.disk_full import disk_full_writing
    from tests.models.test_feature_draft import _net

    _cut_off_trimmed_draft(tmp_path / "d", monkeypatch)
    with pytest.raises(ModelNotFoundError) as info:
        load_model(str(tmp_path / "d"))
    assert str(info.value) == _cut_off(tmp_path / "d")
    disk_full_writing(monkeypatch, "feature_draft.json")
    with pytest.raises(OSError, match="No space left on device"):
        save_feature_draft(_net(), tmp_path / "f")
    with pytest.raises(ModelNotFoundError) as info:
        load_model(str(tmp_path / "f"))
    assert str(info.value) == (
        f"model directory '{tmp_path / 'f'}' has weights but neither config.json nor "
        "feature_draft.json: its save was cut off (a feature draft writes feature_draft.json "
        "last); save or train it again"
    )


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads /proc/self/fd")
def test_the_commands_report_a_cut_off_draft_in_one_line_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from edgespec.cli import main
    from tests.learn.traces.test_command import tiny_tokenizer
    from tests.models.tiny import tiny_target

    draft = tmp_path / "d"
    _cut_off_trimmed_draft(draft, monkeypatch)
    tiny_target().save_pretrained(tmp_path / "target")
    tiny_tokenizer().save_pretrained(tmp_path / "target")
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "w5 w9 w7"}\n')
    capsys.readouterr()
    trace = ["trace", "--target", str(tmp_path / "target"), "--draft", str(draft)]
    assert main([*trace, "--dataset", str(prompts), "--out", str(tmp_path / "t.jsonl")]) == 2
    assert capsys.readouterr().err == f"edgespec trace: {_cut_off(draft)}\n"
    draft_command = ["draft", "--server", "127.0.0.1:1", "--draft", str(draft)]
    assert main([*draft_command, "--prompt-ids", "1"]) == 2  # before any server is asked
    assert capsys.readouterr().err == f"edgespec draft: --draft: {_cut_off(draft)}\n"


def test_the_tokenizer_of_a_cut_off_draft_is_refused_not_none(tmp_path: Path) -> None:
    """Was ``None``, as for a name that resolves to no model: the callers said "no
    tokenizer" of a draft whose save was cut off (the registry's refusal, now)."""
    from tests.learn.traces.test_checks import cut_off_draft

    draft = cut_off_draft(tmp_path / "cut")
    with pytest.raises(BrokenModelError) as refused:
        load_tokenizer(str(draft))
    assert str(refused.value) == (
        f"model directory '{draft}' holds a trimmed draft without its trimmed_vocab.json: its "
        "save was cut off before it finished; save or train the draft again"
    )
    assert load_tokenizer(str(tmp_path / "gone")) is None
    assert load_tokenizer("no-such-model") is None


def test_a_directory_of_a_tokenizer_alone_is_read(tmp_path: Path) -> None:
    """``--tokenizer DIR`` of a tokenizer saved alone (no model beside it) was "no tokenizer
    found": only model directories were looked at. Weights without a config are still a
    save cut off, tokenizer or not."""
    from tests.word_tokenizer import make_word_tokenizer

    alone = tmp_path / "tokenizer"
    make_word_tokenizer(16, chat_template="{{ messages }}").save_pretrained(alone)
    tokenizer = load_tokenizer(str(alone))
    assert tokenizer is not None and tokenizer("w3 w5")["input_ids"] == [3, 5]
    assert tokenizer.chat_template == "{{ messages }}"
    (alone / "model.safetensors").write_bytes(b"")
    with pytest.raises(BrokenModelError, match="has weights but neither config.json"):
        load_tokenizer(str(alone))


def test_without_its_tokenizer_a_model_reads_no_tokenizer(tmp_path: Path) -> None:
    """A verification server sees token ids only: its target loads without the tokenizer
    saved beside it (Gemma's took seconds of every start), the same weights."""
    from tests.word_tokenizer import make_word_tokenizer

    model = tiny_llama(seed=0)
    model.save_pretrained(str(tmp_path / "m"))
    make_word_tokenizer(16).save_pretrained(tmp_path / "m")
    assert load_model(str(tmp_path / "m")).tokenizer is not None
    loaded = load_model(str(tmp_path / "m"), with_tokenizer=False)
    assert loaded.tokenizer is None and not loaded.model.training
    ids = torch.tensor([[3, 4, 5]])
    with torch.no_grad():
        assert torch.equal(loaded.model(input_ids=ids).logits, model(input_ids=ids).logits)
