"""``/metrics`` counts the endpoint's generations by ``edgespec.mode``: how each admitted
request ended, the completed ones' tokens (as their usage said), and histograms of the
seconds to their first token and to their end, so that distributed and centralized
requests on one endpoint compare side by side. ``/metrics`` said only the queues and the
servers' states: how requests ended, and in which mode, was not counted at all."""

from __future__ import annotations

import threading
import time
import urllib.request
from typing import Any

import pytest

from edgespec.runtime.edge.reconnect import Cancelled
from edgespec.runtime.openai_api.choices import Choices
from edgespec.runtime.openai_api.generation import Completion
from edgespec.runtime.openai_api.request_metrics import RequestMetrics
from edgespec.runtime.openai_api.serve import ApiThread
from tests.runtime.openai_api.conftest import MODEL
from tests.runtime.openai_api.test_server_health import Clock

NO_EOS: dict[str, Any] = {"ignore_eos": True}
CENTRALIZED: dict[str, Any] = {"edgespec": {"mode": "centralized"}, **NO_EOS}


def _samples(text: str) -> dict[str, float]:
    """Each sample line of a Prometheus text: its name with labels, to its value."""
    rows = (line.rsplit(" ", 1) for line in text.splitlines() if not line.startswith("#"))
    return {name: float(value) for name, value in rows}


def _metrics(api: ApiThread) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{api.port}/metrics", timeout=30) as reply:
        return _samples(reply.read().decode())


def _ended(samples: dict[str, float], mode: str, outcome: str) -> float:
    return samples[f'edgespec_openai_requests_finished_total{{mode="{mode}",outcome="{outcome}"}}']


def test_each_mode_counts_its_requests_tokens_and_times(api: ApiThread, client: Any) -> None:
    before = _metrics(api)
    assert (
        before['edgespec_openai_requests_finished_total{mode="centralized",outcome="failed"}'] == 0
    )
    usage = [
        client.completions.create(model=MODEL, prompt="w1 w2", max_tokens=5,
                                  extra_body=NO_EOS).usage,
        client.completions.create(model=MODEL, prompt="w3 w4 w5", max_tokens=3,
                                  extra_body=CENTRALIZED).usage,
        client.completions.create(model=MODEL, prompt="w6", max_tokens=0, echo=True,
                                  extra_body=CENTRALIZED).usage,  # no token shown
    ]  # fmt: skip
    after = _metrics(api)
    grew = {name: after[name] - before.get(name, 0.0) for name in after}
    assert {(m, o): _ended(grew, m, o) for m in ("distributed", "centralized")
            for o in ("completed", "failed", "cancelled")} == {
        ("distributed", "completed"): 1, ("distributed", "failed"): 0,
        ("distributed", "cancelled"): 0, ("centralized", "completed"): 2,
        ("centralized", "failed"): 0, ("centralized", "cancelled"): 0}  # fmt: skip
    for mode, done in (("distributed", usage[:1]), ("centralized", usage[1:])):
        label = f'{{mode="{mode}"}}'
        assert grew[f"edgespec_openai_prompt_tokens_total{label}"] == sum(
            u.prompt_tokens for u in done
        )
        assert grew[f"edgespec_openai_completion_tokens_total{label}"] == sum(
            u.completion_tokens for u in done
        )
        assert grew[f"edgespec_openai_time_to_first_token_seconds_count{label}"] == 1
        assert grew[f"edgespec_openai_request_seconds_count{label}"] == len(done)
        first = grew[f"edgespec_openai_time_to_first_token_seconds_sum{label}"]
        assert 0 < first <= grew[f"edgespec_openai_request_seconds_sum{label}"]


def test_a_client_that_leaves_mid_stream_is_counted_cancelled(api: ApiThread, client: Any) -> None:
    before = _ended(_metrics(api), "centralized", "cancelled")
    stream = client.completions.create(model=MODEL, prompt="w1", max_tokens=4000, stream=True,
                                       extra_body=CENTRALIZED)  # fmt: skip
    next(iter(stream))
    stream.close()
    deadline = time.monotonic() + 30
    while _ended(_metrics(api), "centralized", "cancelled") == before:
        assert time.monotonic() < deadline, "the request left was never counted"
        time.sleep(0.05)
    assert _ended(_metrics(api), "centralized", "cancelled") == before + 1


def _done(first_at: float | None, tokens: int) -> Choices:
    return Choices((Completion("x", 4, tokens, "length", None, first_at),), 4)


def test_work_is_timed_from_arrival_and_each_end_is_classed() -> None:
    clock = Clock()
    metrics = RequestMetrics(clock)

    def work(result: Choices | BaseException, took_s: float) -> Any:
        def run(on_text: Any, cancel: threading.Event) -> Choices:
            clock.now_s += took_s
            if isinstance(result, BaseException):
                raise result
            return result

        return run

    cancel = threading.Event()
    metrics.timed(work(_done(100.3, 7), 1.5), "distributed", 100.0)(print, cancel)
    for error in (Cancelled(), RuntimeError("broken")):
        with pytest.raises(type(error)):
            metrics.timed(work(error, 1.0), "centralized", clock.now_s)(print, cancel)
    cancel.set()  # the client gone: whatever the work raised, it was cancelled
    with pytest.raises(RuntimeError):
        metrics.timed(work(RuntimeError("cut"), 1.0), "centralized", clock.now_s)(print, cancel)
    samples = _samples(metrics.metrics())
    assert [_ended(samples, "centralized", o) for o in ("completed", "failed", "cancelled")] == [
        0, 1, 2]  # fmt: skip
    assert _ended(samples, "distributed", "completed") == 1
    distributed = '{mode="distributed"}'
    assert samples[f"edgespec_openai_completion_tokens_total{distributed}"] == 7
    assert samples[f"edgespec_openai_prompt_tokens_total{distributed}"] == 4
    assert samples[f"edgespec_openai_time_to_first_token_seconds_sum{distributed}"] == 0.3
    assert samples[f"edgespec_openai_request_seconds_sum{distributed}"] == 1.5
    first = "edgespec_openai_time_to_first_token_seconds_bucket"
    assert samples[f'{first}{{mode="distributed",le="0.25"}}'] == 0
    assert samples[f'{first}{{mode="distributed",le="0.5"}}'] == 1
    assert samples[f'{first}{{mode="distributed",le="+Inf"}}'] == 1
    assert samples['edgespec_openai_request_seconds_count{mode="centralized"}'] == 0
