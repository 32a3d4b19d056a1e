"""``edgespec.mode: "centralized"``: a request the server decodes alone (the baseline,
through the same endpoint), and an endpoint started with ``--mode centralized`` that loads
no draft: the target's own greedy tokens and log-probabilities, stop sequences that end the
stream on the server, ``n`` choices seeded as the distributed ones, a stream the server lost
gone on where it was cut; what such a request cannot ask refused, each with its message."""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from typing import Any, cast

import openai
import pytest

from edgespec.config import from_dict
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.openai_api.app import ApiConfig, build_app
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.schema import Defaults
from edgespec.runtime.openai_api.serve import ApiThread
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.greedy_oracles import target_logprobs
from tests.runtime.openai_api.conftest import LIMITS, MODEL, _error, word_tokenizer

TOKENIZER = word_tokenizer(64)
PROMPT = [5, 6, 7, 40, 41, 2, 9]
NO_EOS = {"ignore_eos": True}
CENTRALIZED = {"edgespec": {"mode": "centralized"}, **NO_EOS}


def _text(ids: Any) -> str:
    return str(TOKENIZER.decode(list(ids)))


def _central_endpoint(verifier: RemoteVerifier, address: str) -> ApiThread:
    """An endpoint as ``--serve-openai --mode centralized`` builds it: no draft model (a
    distributed round could not be drafted), requests centralized by default."""
    config = from_dict(DrafterConfig, {"server": address, "draft": "tiny-draft"})
    setup = EdgeSetup(config, None, TOKENIZER, 64, 24, (verifier,), drafts=False)
    defaults = Defaults(max_tokens=16, mode="centralized")
    return ApiThread(build_app(setup, ApiConfig(MODEL, defaults, LIMITS)), "127.0.0.1").start()


@pytest.fixture(scope="module")
def central(grpc_server: ServerThread) -> Iterator[ApiThread]:
    address = f"127.0.0.1:{grpc_server.port}"
    running = _central_endpoint(RemoteVerifier(address, timeout_s=30.0), address)
    yield running
    running.stop()


class CutOnce(RemoteVerifier):
    """The server's client whose first ``Generate`` stream is lost after two chunks (the
    server gone mid-stream, as a restart loses it): ``UNAVAILABLE``, the stream cancelled."""

    def __init__(self, address: str) -> None:
        super().__init__(address, timeout_s=30.0)
        self.asked: list[Any] = []

    def generate(self, spec: Any, *args: Any, **kwargs: Any) -> Iterator[tuple[int, ...]]:
        self.asked.append(spec)
        stream = cast(Generator[tuple[int, ...]], super().generate(spec, *args, **kwargs))
        for i, chunk in enumerate(stream):
            if len(self.asked) == 1 and i == 2:
                stream.close()
                raise RequestError(ErrorCode.UNAVAILABLE, "the server went away")
            yield chunk


def _client(api: ApiThread) -> Any:
    return openai.OpenAI(base_url=f"http://127.0.0.1:{api.port}/v1", api_key="-",
                         max_retries=0, timeout=60)  # fmt: skip


def _sessions_closed(server: ServerThread) -> int:
    """The server's sessions once its streams have ended (at most 30 s)."""
    assert server.service is not None
    deadline = time.monotonic() + 30
    while server.service.stats().num_sessions and time.monotonic() < deadline:
        time.sleep(0.02)
    return server.service.stats().num_sessions


def test_a_centralized_endpoint_returns_the_targets_tokens_and_logprobs(
    central: ApiThread, target: TransformersTarget
) -> None:
    """No draft model is loaded, so every token came from the server's own decoding."""
    greedy = target_greedy_decode(target, tuple(PROMPT), 10)
    out = _client(central).completions.create(model=MODEL, prompt=PROMPT, max_tokens=10,
                                              logprobs=2, extra_body=NO_EOS)  # fmt: skip
    choice = out.choices[0]
    assert choice.text == _text(greedy)
    assert choice.finish_reason == "length"
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (len(PROMPT), 10)
    want = target_logprobs(target, tuple(PROMPT), greedy, 2)
    assert choice.logprobs.tokens == [_text([t]) for t in greedy]
    assert choice.logprobs.token_logprobs == pytest.approx([lp for lp, _ in want], abs=1e-4)
    for top, (_, alternatives) in zip(choice.logprobs.top_logprobs, want, strict=True):
        assert list(top) == [_text([t]) for t, _ in alternatives]


def test_a_centralized_request_streams_what_the_distributed_one_returns(
    client: Any, target: TransformersTarget
) -> None:
    greedy = target_greedy_decode(target, tuple(PROMPT), 12)
    ask: dict[str, Any] = {"prompt": PROMPT, "max_tokens": 12}
    distributed = client.completions.create(model=MODEL, **ask, extra_body=NO_EOS).choices[0].text
    parts = client.completions.create(model=MODEL, **ask, stream=True, extra_body=CENTRALIZED)
    streamed = "".join(c.choices[0].text for c in parts if c.choices)
    assert streamed == distributed == _text(greedy)


def test_a_stop_sequence_ends_the_text_and_the_servers_stream(
    central: ApiThread, grpc_server: ServerThread, target: TransformersTarget
) -> None:
    greedy = target_greedy_decode(target, tuple(PROMPT), 8)
    stop = _text(greedy[3:5])
    out = _client(central).completions.create(model=MODEL, prompt=PROMPT, max_tokens=4000,
                                              stop=[stop], extra_body=NO_EOS)  # fmt: skip
    assert out.choices[0].text == _text(greedy[:3])
    assert out.choices[0].finish_reason == "stop"
    assert _sessions_closed(grpc_server) == 0  # not decoding on towards 4000 tokens


def test_a_stream_the_server_lost_goes_on_where_it_was_cut(
    grpc_server: ServerThread, target: TransformersTarget
) -> None:
    """The text is the target's whole greedy output, as an uncut stream's: the second
    stream's prompt held the two tokens the first had streamed."""
    greedy = target_greedy_decode(target, tuple(PROMPT), 10)
    address = f"127.0.0.1:{grpc_server.port}"
    verifier = CutOnce(address)
    api = _central_endpoint(verifier, address)
    try:
        out = _client(api).completions.create(model=MODEL, prompt=PROMPT, max_tokens=10,
                                              extra_body=NO_EOS)  # fmt: skip
    finally:
        api.stop()
    assert out.choices[0].text == _text(greedy)
    assert out.usage.completion_tokens == 10
    _, resumed = verifier.asked
    assert resumed.prompt_token_ids == (*PROMPT, *greedy[:2])
    assert (resumed.sampling.max_new_tokens, resumed.num_prior_output_tokens) == (8, 2)
    assert _sessions_closed(grpc_server) == 0


def test_n_sampled_choices_are_seeded_as_single_requests(central: ApiThread) -> None:
    """Choice i of a seeded request is the request seeded ``seed + i``."""
    client = _client(central)
    ask: dict[str, Any] = {"prompt": PROMPT, "max_tokens": 12, "temperature": 1.0,
                           "extra_body": NO_EOS}  # fmt: skip
    both = client.completions.create(model=MODEL, **ask, n=2, seed=40).choices
    alone = [client.completions.create(model=MODEL, **ask, seed=s).choices[0].text
             for s in (40, 41)]  # fmt: skip
    assert [c.text for c in sorted(both, key=lambda c: c.index)] == alone


@pytest.mark.parametrize(
    ("endpoint", "body", "param", "message"),
    [
        ("central", {"edgespec": {"mode": "distributed"}}, "edgespec.mode",
         'edgespec.mode "distributed": this endpoint drafts nothing (it was started with '
         '--mode centralized, no draft loaded): ask "centralized"'),
        ("api", {"edgespec": {"mode": "centralized", "window": "static"}}, "edgespec.window",
         "edgespec.window: a centralized request drafts nothing (the server decodes alone); "
         'drop the window or ask edgespec.mode "distributed"'),
        ("api", {"edgespec": {"mode": "fused"}}, "edgespec.mode",
         'edgespec.mode must be one of ["distributed", "centralized"], got "fused"'),
    ],
    ids=["distributed-without-draft", "window", "fused"],
)  # fmt: skip
def test_what_a_mode_cannot_run_is_a_400_naming_the_field(
    request: pytest.FixtureRequest, endpoint: str, body: dict[str, Any], param: str, message: str
) -> None:
    api = request.getfixturevalue(endpoint)
    status, error = _error(api, {"model": MODEL, "prompt": "w1", "max_tokens": 2, **body})
    assert (status, error["param"], error["message"]) == (400, param, message)
