"""Whose fault a failure is: a server default a request could never be given is refused at
startup (not answered 400 to every client); what the drafter cannot do for a request is a
400 naming the field, before the request waits for a worker; anything else that fails is
the endpoint's own, a 500 that is logged."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from edgespec.config import from_dict
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.openai_api.serve import ApiThread
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.openai_api.conftest import MODEL, _error, word_tokenizer


def test_a_default_max_tokens_over_the_limit_is_refused_at_startup(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--max-new-tokens 2048`` under the default ``--openai-max-tokens 1024`` served, and
    every request without max_tokens was refused: "max_tokens must be in [1, 1024], got
    2048", blaming the client. Refused before the server is reached (there is none here)."""
    from edgespec.cli import main

    argv = ["draft", "--server", "127.0.0.1:1", "--draft", "ngram",
            "--serve-openai", "127.0.0.1:0", "--max-new-tokens", "2048"]  # fmt: skip
    assert main(argv) == 2
    said = capsys.readouterr().err.strip()
    assert said.endswith(
        "edgespec draft: --max-new-tokens: 2048 is the max_tokens of a request that gives none, "
        "over --openai-max-tokens 1024: lower --max-new-tokens or raise --openai-max-tokens"
    )


def test_an_openai_max_tokens_beyond_the_targets_context_is_refused_at_startup(
    grpc_server: ServerThread, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The tiny target's context is 4,096 tokens: ``--openai-max-tokens 8000`` served, and
    every request asking for more than 4,095 was a 400 (context exceeded) however short its
    prompt; so was every request without max_tokens under ``--max-new-tokens 4096`` (not
    over ``--openai-max-tokens``). 4,095 leaves room for one prompt token."""
    from edgespec.cli import main
    from edgespec.runtime.commands import draft as draft_command
    from edgespec.runtime.openai_api import serve

    monkeypatch.setattr(draft_command, "_tokenizer", lambda *a, **k: word_tokenizer(64))
    monkeypatch.setattr(serve, "ApiThread", _PortTaken)  # an endpoint never starts here
    argv = ["draft", "--server", f"127.0.0.1:{grpc_server.port}", "--draft", "ngram",
            "--serve-openai", "127.0.0.1:0"]  # fmt: skip
    for limit, default in (("8000", "4096"), ("4096", "16")):
        assert main([*argv, "--openai-max-tokens", limit, "--max-new-tokens", default]) == 2
        assert capsys.readouterr().err.strip().splitlines()[-1] == (
            f"edgespec draft: --openai-max-tokens: {limit} is over what the target's context "
            "of 4096 tokens holds after a one-token prompt: lower it to 4095 or below"
        )
    # 4095 gets past the check, to the endpoint's start (a port found taken)
    assert main([*argv, "--openai-max-tokens", "4095", "--max-new-tokens", "4095"]) == 2
    assert capsys.readouterr().err.strip().endswith("edgespec draft: port 0 taken")


class _PortTaken:
    """An endpoint whose port was taken since it was checked."""

    def __init__(self, *args: Any) -> None:
        pass

    def start(self) -> None:
        raise OSError("port 0 taken")


def test_an_app_whose_default_max_tokens_no_request_may_have_is_not_built() -> None:
    from edgespec.runtime.openai_api.app import ApiConfig
    from edgespec.runtime.openai_api.schema import Defaults

    with pytest.raises(ValueError, match="the default max_tokens 2048 is over the limit of 1024"):
        ApiConfig(MODEL, Defaults(max_tokens=2048))


def test_top_p_0_is_greedy_so_a_tree_drafter_takes_it_at_any_temperature() -> None:
    """top_p 0 keeps only the most likely token: the request is greedy (temperature 0, and
    top_p 1 for the core, whose top_p is in (0, 1]), which a tree drafter verifies."""
    from edgespec.runtime.openai_api.edge_setup import EdgeSetup
    from edgespec.runtime.openai_api.generation import prepare
    from edgespec.runtime.openai_api.sampling_fields import SamplingFields
    from edgespec.runtime.openai_api.schema import Defaults, Limits, parse_request

    config = from_dict(DrafterConfig, {"server": "127.0.0.1:1", "draft": "tiny-draft",
                                       "tree": "2,1"})  # fmt: skip
    setup = EdgeSetup(config, None, word_tokenizer(64), 64, 24, ())
    body = {
        "model": MODEL,
        "prompt": "w1 w2",
        "temperature": 0.7,
        "top_p": 0,
        "seed": 3,
        "top_k": 5,
        "min_p": 0.5,
    }
    request = parse_request(body, False, Defaults(), Limits())
    assert request.sampling == SamplingFields(0.0)  # every cut off
    sampling = prepare(setup, request, Limits()).sampling
    assert (sampling.temperature, sampling.top_p, sampling.greedy) == (0.0, 1.0, True)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_drafter_bug_is_a_logged_500_not_the_clients_400(
    api: ApiThread, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
    stream: bool,
) -> None:  # fmt: skip
    from edgespec.runtime.edge import drafter

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("max() arg is an empty sequence")

    monkeypatch.setattr(drafter, "generate", broken)
    with caplog.at_level(logging.ERROR, logger="edgespec.runtime.openai_api.app"):
        status, error = _error(api, {"model": MODEL, "prompt": "w1", "stream": stream})
    assert (status, error["type"], error["param"]) == (500, "server_error", None)
    assert error["message"] == "internal error: ValueError: max() arg is an empty sequence"
    [record] = [r for r in caplog.records if r.name == "edgespec.runtime.openai_api.app"]
    assert record.message == "internal error answering a request"
    assert record.exc_info is not None and record.exc_info[0] is ValueError
