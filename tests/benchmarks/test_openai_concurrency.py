"""benchmarks/probes/openai_concurrency.py --make-tiny: the model it saves serves chat as
docs/DEPLOY.md (*Trying the endpoint on a tiny model*) shows, its chat template joining the
messages' contents so that a chat prompt is the same tokens as the completion's text."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from transformers import AutoTokenizer

from edgespec.runtime.openai_api.chat_prompt import special_ids
from edgespec.runtime.openai_api.messages import Message
from edgespec.runtime.openai_api.prompts import prompt_ids
from edgespec.runtime.openai_api.schema import Limits
from tests.benchmarks.scripts import load_script

PROBE = load_script("probes/openai_concurrency.py", "openai_concurrency_probe")


def test_the_tiny_model_s_chat_prompt_is_the_completion_s_tokens(tmp_path: Path) -> None:
    PROBE.make_tiny(str(tmp_path / "tiny"))
    tokenizer = AutoTokenizer.from_pretrained(str(tmp_path / "tiny"), local_files_only=True)
    chat = prompt_ids(
        tokenizer, special_ids(tokenizer), (Message("user", "w5 w6 w7"),), 64, Limits()
    )
    assert chat == prompt_ids(tokenizer, frozenset(), "w5 w6 w7", 64, Limits()) == (5, 6, 7)
