"""vLLM's ``/tokenizer_info``, ``/tokenize`` and ``/detokenize`` on the endpoint (were 404s:
lm-evaluation-harness's ``local-completions`` probes them to tokenize through the server,
else needs the tokenizer on the client): the endpoint's tokenizer, ``add_special_tokens``
as vLLM's, chat messages rendered as a chat request's are; bodies bounded as a
completion's, each refusal a 400 naming its field. No verification server is needed."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from edgespec.config import from_dict
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.openai_api.app import ApiConfig, build_app
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.schema import Defaults, Limits
from edgespec.runtime.openai_api.serve import ApiThread
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from tests.runtime.openai_api.conftest import CHAT_TEMPLATE, MODEL, _error, _post, free_port
from tests.word_tokenizer import make_word_tokenizer, word_vocab

LIMITS = Limits(max_body_bytes=4096, max_prompt_tokens=8, max_tokens=4)
TEMPLATE = CHAT_TEMPLATE + "{% if add_generation_prompt %}w9 {% endif %}"
"""The tests' chat template with a generation prompt: the word ``w9``."""


def _tokenizer() -> Any:
    """Words with ``<bos>`` (1) and ``<eos>`` (2), the BOS put before a text's words as a
    model's tokenizer puts it (``add_special_tokens``)."""
    from tokenizers import processors

    tokenizer = make_word_tokenizer(word_vocab(64, {1: "<bos>", 2: "<eos>"}), bos_token="<bos>",
                                    eos_token="<eos>", chat_template=TEMPLATE)  # fmt: skip
    tokenizer._tokenizer.post_processor = processors.TemplateProcessing(
        single="<bos> $A", special_tokens=[("<bos>", 1)]
    )
    return tokenizer


@pytest.fixture(scope="module")
def api(draft_model: Any) -> Iterator[ApiThread]:
    address = f"127.0.0.1:{free_port()}"  # nothing listens: these routes never verify
    config = from_dict(DrafterConfig, {"server": address, "draft": "tiny-draft"})
    verifier = RemoteVerifier(address, timeout_s=1.0)
    setup = EdgeSetup(config, draft_model, _tokenizer(), 64, 24, (verifier,), None, 40)
    running = ApiThread(
        build_app(setup, ApiConfig(MODEL, Defaults(max_tokens=4), LIMITS)), "127.0.0.1"
    ).start()
    yield running
    running.stop()


def _json(api: ApiThread, path: str, body: dict[str, Any]) -> dict[str, Any]:
    status, reply, _ = _post(api, path, json.dumps(body).encode())
    assert status == 200, reply
    return reply


def test_tokenizer_info(api: ApiThread) -> None:
    with urllib.request.urlopen(f"http://127.0.0.1:{api.port}/tokenizer_info") as response:
        info = json.loads(response.read())
    assert info == {"tokenizer_class": type(_tokenizer()).__name__, "bos_token": "<bos>",
                    "eos_token": "<eos>", "pad_token": None, "unk_token": "w0",
                    "chat_template": TEMPLATE, "model_max_length": 40}  # fmt: skip


def test_tokenize_and_detokenize(api: ApiThread) -> None:
    """lm-eval's probe (``"test"`` without special tokens) and its encode/decode calls."""
    plain = _json(api, "/tokenize", {"prompt": "w5 w6 w7"})
    assert plain == {"count": 4, "max_model_len": 40, "tokens": [1, 5, 6, 7], "token_strs": None}
    bare = _json(api, "/tokenize", {"prompt": "w5 w6 w7", "add_special_tokens": False})
    assert bare["tokens"] == [5, 6, 7]
    spelt = _json(api, "/tokenize", {"prompt": "w5 w6", "return_token_strs": True})
    assert spelt["token_strs"] == ["<bos>", "w5", "w6"]
    assert _json(api, "/tokenize", {"prompt": "test", "add_special_tokens": False})["tokens"] == [0]
    messages = [{"role": "user", "content": "w5 w6"}]
    chat = _json(api, "/tokenize", {"model": MODEL, "messages": messages})
    assert chat["tokens"] == [5, 6, 9]  # as a chat request's: the template's text, its own BOS
    bare_chat = _json(api, "/tokenize", {"messages": messages, "add_generation_prompt": False})
    assert bare_chat["tokens"] == [5, 6]  # vLLM's add_generation_prompt: no w9
    assert _json(api, "/detokenize", {"tokens": [5, 6, 7]}) == {"prompt": "w5w6w7"}
    assert _json(api, "/detokenize", {"tokens": []}) == {"prompt": ""}


def test_a_null_field_is_absent_as_in_a_completion(api: ApiThread) -> None:
    """``"model": null`` was a 404 naming the model "null", and an unknown field set to
    null a 400, where a completion's body takes both as absent."""
    reply = _json(api, "/tokenize", {"prompt": "w5", "model": None, "user": None,
                                     "add_special_tokens": None})  # fmt: skip
    assert reply["tokens"] == [1, 5]
    assert _json(api, "/detokenize", {"tokens": [5], "model": None}) == {"prompt": "w5"}


REFUSALS = [
    ("/tokenize", {"prompt": "w1", "continue_final_message": True}, 400,
     "continue_final_message",
     "continue_final_message applies to chat messages, not to a text prompt"),
    ("/tokenize", {"prompt": "w1", "echo": True}, 400,
     "echo", "unknown field \"echo\": this route takes add_generation_prompt, "
     "add_special_tokens, chat_template_kwargs, continue_final_message, messages, model, "
     "prompt, return_token_strs"),
    ("/tokenize", {"prompt": "w1", "chat_template_kwargs": {}}, 400, "chat_template_kwargs",
     "chat_template_kwargs applies to chat messages, not to a text prompt"),
    ("/tokenize", {"prompt": "w1", "add_generation_prompt": True}, 400,
     "add_generation_prompt",
     "add_generation_prompt applies to chat messages, not to a text prompt"),
    ("/tokenize", {"messages": [{"role": "user", "content": "w1"}],
                   "add_generation_prompt": "no"}, 400, "add_generation_prompt",
     'add_generation_prompt must be a boolean, got "no"'),
    ("/tokenize", {"prompt": "w1", "return_token_strs": "yes"}, 400, "return_token_strs",
     'return_token_strs must be a boolean, got "yes"'),
    ("/tokenize", {"prompt": "w1", "model": "gpt-9"}, 404, "model",
     "the model \"gpt-9\" does not exist; this endpoint serves \"tiny\" (see /v1/models)"),
    ("/tokenize", {"prompt": "w1", "messages": []}, 400, "prompt",
     "give prompt (text) or messages (chat), one of them"),
    ("/tokenize", {}, 400, "prompt", "give prompt (text) or messages (chat), one of them"),
    ("/tokenize", {"prompt": "w1", "add_special_tokens": 1}, 400, "add_special_tokens",
     "add_special_tokens must be a boolean, got 1"),
    ("/tokenize", {"prompt": [5, 6]}, 400, "prompt", "prompt must be a string here, got [5, 6]"),
    ("/tokenize", {"prompt": "x" * 129}, 400, "prompt",
     "the prompt is 129 characters, over the limit of 128 characters (16 per token of "
     "--openai-max-prompt-tokens 8)"),
    ("/detokenize", {"tokens": [1] * 13}, 400, "tokens",
     "tokens holds 13 ids, over the limit of 12 (a prompt and a completion)"),
    ("/detokenize", {"tokens": [5, 70]}, 400, "tokens",
     "tokens [70] are outside the target's vocabulary of 64"),
    ("/detokenize", {"tokens": "w5"}, 400, "tokens",
     'tokens must be a list of token ids, got "w5"'),
    ("/detokenize", {"tokens": [5], "prompt": "w1"}, 400, "prompt",
     "unknown field \"prompt\": this route takes model, tokens"),
]  # fmt: skip


@pytest.mark.parametrize(("path", "body", "status", "param", "message"), REFUSALS)
def test_refusals_name_the_field(
    api: ApiThread, path: str, body: dict[str, Any], status: int, param: str, message: str
) -> None:
    got, error = _error(api, body, path=path)
    assert (got, error["param"], error["message"]) == (status, param, message)


def test_a_body_that_is_not_json_is_415(api: ApiThread) -> None:
    status, error = _error(api, b"w1", path="/tokenize", content_type="text/plain")
    assert (status, error["code"]) == (415, "unsupported_media_type")
