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
from edgespec.models.registry import ModelNotFoundError  # noqa: E402
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
