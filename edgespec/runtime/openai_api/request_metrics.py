"""The endpoint's generations on ``/metrics``, by ``edgespec.mode`` (:class:`RequestMetrics`):
how each admitted request ended (``completed``, ``failed``: answered with an error,
``cancelled``: its client left or the endpoint stopped), the prompt and completion tokens
of the completed ones, and two histograms of them, in seconds from the request's arrival:
to its first completion token (``time_to_first_token_seconds``; a request that showed
none, ``max_tokens`` 0, is not observed) and to its end (``request_seconds``). Every mode
and outcome has its series from the start (at most 2 × 3), whatever the clients send; the
distributed and centralized requests of one endpoint compare side by side."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from edgespec.runtime.edge.reconnect import Cancelled
from edgespec.runtime.openai_api.admission import metric_family
from edgespec.runtime.openai_api.choices import Choices
from edgespec.runtime.openai_api.extension import MODES
from edgespec.runtime.openai_api.logprob_fields import ChoiceLogprobs
from edgespec.runtime.openai_api.streaming import Work
from edgespec.runtime.server.counters import Histogram

OUTCOMES = ("completed", "failed", "cancelled")
FIRST_TOKEN_BUCKETS_S: tuple[float, ...] = (
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0,
)  # fmt: skip
REQUEST_BUCKETS_S: tuple[float, ...] = (
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0,
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Finished:
    """One admitted request's end: its mode and outcome; a completed one's tokens and its
    seconds from arrival to its first completion token (``None``: it showed none) and to
    its end."""

    mode: str
    outcome: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    first_token_s: float | None = None
    request_s: float | None = None


def finished(mode: str, choices: Choices, arrived_s: float, now_s: float) -> Finished:
    """A completed request's :class:`Finished` from its ``choices`` (each completion's first
    token's time on the clock that read ``arrived_s`` and ``now_s``)."""
    firsts = [c.first_token_at_s for c in choices.completions if c.first_token_at_s is not None]
    first_s = min(firsts) - arrived_s if firsts else None
    return Finished(mode, "completed", choices.prompt_tokens, choices.completion_tokens, first_s,
                    now_s - arrived_s)  # fmt: skip


class RequestMetrics:
    """The counters and histograms, per mode; :meth:`timed` wraps a request's work so that
    its end is recorded (from its worker thread: the record is locked)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._outcomes = {(mode, outcome): 0 for mode in MODES for outcome in OUTCOMES}
        self._tokens = {(mode, kind): 0 for mode in MODES for kind in ("prompt", "completion")}
        self._first_token = {mode: Histogram(FIRST_TOKEN_BUCKETS_S) for mode in MODES}
        self._request = {mode: Histogram(REQUEST_BUCKETS_S) for mode in MODES}

    def record(self, end: Finished) -> None:
        with self._lock:
            self._outcomes[end.mode, end.outcome] += 1
            self._tokens[end.mode, "prompt"] += end.prompt_tokens
            self._tokens[end.mode, "completion"] += end.completion_tokens
            if end.first_token_s is not None:
                self._first_token[end.mode].observe(end.first_token_s)
            if end.request_s is not None:
                self._request[end.mode].observe(end.request_s)

    def timed(self, work: Work, mode: str, arrived_s: float) -> Work:
        """``work`` recording its end: completed with its choices, cancelled
        (:class:`Cancelled`: the client gone, the endpoint stopping) or failed (any other
        error, raised on as before)."""

        def run(on_text: Callable[[int, str, ChoiceLogprobs | None], None],
                cancel: threading.Event) -> Choices:  # fmt: skip
            try:
                choices = work(on_text, cancel)
            except BaseException as exc:
                left = isinstance(exc, Cancelled) or cancel.is_set()
                self.record(Finished(mode, "cancelled" if left else "failed"))
                raise
            self.record(finished(mode, choices, arrived_s, self._clock()))
            return choices

        return run

    def metrics(self) -> str:
        """The counters and histograms in Prometheus' text format."""
        with self._lock:
            ended = [(f'{{mode="{m}",outcome="{o}"}}', n) for (m, o), n in self._outcomes.items()]
            text = metric_family("requests_finished_total", "counter",
                                 "admitted requests ended, by mode and outcome", ended)  # fmt: skip
            for kind in ("prompt", "completion"):
                tokens = [(f'{{mode="{m}"}}', self._tokens[m, kind]) for m in MODES]
                what = f"{kind} tokens of completed requests, by mode"
                text += metric_family(f"{kind}_tokens_total", "counter", what, tokens)
            text += _histogram("time_to_first_token_seconds", "seconds from a completed "
                               "request's arrival to its first completion token, by mode",
                               self._first_token)  # fmt: skip
            return text + _histogram("request_seconds", "seconds from a completed request's "
                                     "arrival to its end, by mode", self._request)  # fmt: skip


def _histogram(name: str, text: str, per_mode: dict[str, Histogram]) -> str:
    """A histogram per mode in Prometheus' text format (cumulative ``le`` buckets, ``+Inf``,
    ``_sum``, ``_count``)."""
    metric = f"edgespec_openai_{name}"
    lines = [f"# HELP {metric} {text}", f"# TYPE {metric} histogram"]
    for mode, histogram in per_mode.items():
        h = histogram.snapshot()
        bounds = [*(f"{b:g}" for b in h.bounds), "+Inf"]
        for bound, count in zip(bounds, (*h.cumulative, h.count), strict=True):
            lines.append(f'{metric}_bucket{{mode="{mode}",le="{bound}"}} {count}')
        lines += [f'{metric}_sum{{mode="{mode}"}} {h.sum:.6g}',
                  f'{metric}_count{{mode="{mode}"}} {h.count}']  # fmt: skip
    return "\n".join(lines) + "\n"
