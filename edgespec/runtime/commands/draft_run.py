"""One ``edgespec draft`` request in any mode, timed alike: the committed output, a
:class:`~edgespec.core.types.RequestRecord` (tokens/s, time to first token), the rounds of
a distributed run; one stats line and one ``--records`` file format for every mode."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgespec.core.sampling_params import TokenLogprobs
from edgespec.core.types import RequestRecord, RoundRecord, SamplingParams
from edgespec.runtime.commands.draft_output import Shown, logprob_lines
from edgespec.runtime.edge.semantic import SemanticReport


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one request produced and how it was timed."""

    output: tuple[int, ...]
    request: RequestRecord
    rounds: tuple[RoundRecord, ...] = ()
    sent_of_drafted: tuple[int, int] | None = None  # with a stop predictor
    semantic: SemanticReport | None = None  # a semantic (LOSSY) run's
    logprobs: tuple[TokenLogprobs, ...] = ()  # --logprobs: one per output token

    def stats_line(self, mode: str) -> str:
        r = self.request
        line = (
            f"[{mode}: {r.num_output_tokens} tokens, {r.tokens_per_s:.1f} tok/s, "
            f"first token {r.ttft_s:.3f}s"
        )
        if r.num_rounds:
            sent = ""
            if self.sent_of_drafted is not None:
                sent = f"{self.sent_of_drafted[0]} sent of {self.sent_of_drafted[1]} drafted, "
            line += (
                f"; {r.num_rounds} rounds, {sent}"
                f"{r.num_accepted / r.num_rounds:.2f} accepted per round, acceptance "
                f"{r.num_accepted / max(r.num_drafted, 1):.2f} per sent token; "
                f"draft {r.draft_s:.3f}s network {r.network_s:.3f}s queue {r.queue_s:.3f}s "
                f"verify {r.verify_s:.3f}s"
            )
        return line + "]"

    def report(self, mode: str) -> None:
        """The stats line, on stderr (the text went to stdout); a semantic run's LOSSY line
        after it."""
        print(self.stats_line(mode), file=sys.stderr)
        if self.semantic is not None:
            print(self.semantic.line(self.rounds), file=sys.stderr)

    def write_records(self, path: Path) -> None:
        """``--records``: the rounds (distributed) then the request, one JSON row each; a
        semantic run labels every row (``verification``, ``lossy``, ``threshold``,
        ``upload``; per round ``exchanges`` and ``accepted_mismatches``) and ends with a
        ``SemanticSummary`` row (AAL as ``committed_per_round``)."""
        from edgespec.runtime.server.round_log import record_row

        wisv = self.semantic
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w") as f:
            if wisv is None:
                rows = [record_row(r) for r in self.rounds] + [record_row(self.request)]
            else:
                rows = [record_row(r, wisv.round_labels(i)) for i, r in enumerate(self.rounds)]
                rows += [record_row(self.request, wisv.labels), wisv.summary(self.rounds)]
            f.writelines(json.dumps(row) + "\n" for row in rows)


@dataclass(frozen=True, slots=True)
class DraftRun:
    """A prompt against one server, in the mode asked: the same request, output shown as
    it streams (text when a tokenizer is known, else token ids); the first open (a
    distributed run's session, a server-side run's stream until its first chunk) retried
    while the server is unreachable for up to ``first_open_retry_s`` (what routing left of
    ``retry_timeout_s``; 0: it fails at once)."""

    config: Any  # DrafterConfig
    verifier: Any  # RemoteVerifier
    prompt: tuple[int, ...]
    tokenizer: Any
    seed: int | None
    first_open_retry_s: float = 0.0
    clock: Callable[[], float] = time.perf_counter
    end_ids: frozenset[int] = frozenset()  # --chat: the template's end of turn

    def _stop_ids(self) -> frozenset[int]:
        """Where the output ends, its text before it: ``stop_token_ids`` and ``end_ids``."""
        return frozenset(self.config.stop_token_ids) | self.end_ids

    def _shown(self) -> Shown:
        config = self.config
        return Shown(self.tokenizer, config.stop, config.min_tokens, self._stop_ids())

    def _sampling(self) -> SamplingParams:
        return SamplingParams(
            temperature=self.config.temperature,
            top_p=self.config.top_p,
            max_new_tokens=self.config.max_new_tokens,
            seed=self.seed,
            top_k=self.config.top_k,
            min_p=self.config.min_p,
            ignore_eos=self.config.ignore_eos,
            repetition_penalty=self.config.repetition_penalty,
            frequency_penalty=self.config.frequency_penalty,
            presence_penalty=self.config.presence_penalty,
            stop_token_ids=tuple(sorted(self._stop_ids())),
            min_tokens=self.config.min_tokens,
            logit_bias=tuple(sorted(self.config.logit_bias)),
            logprobs=self.config.logprobs,
        )

    def _session_id(self) -> str:
        from edgespec.runtime.edge.session_ids import new_session_id

        return new_session_id(self.config.client_id)

    def server_side(self, fused: bool, ready: Callable[[], None] | None = None) -> Outcome:
        """Centralized (the server decodes alone) or fused (the server drafts too);
        ``ready`` is called just before the first token is asked for."""
        from edgespec.runtime.messages import SessionSpec

        config = self.config
        session_id = self._session_id()
        spec = SessionSpec(session_id, config.client_id, self.prompt, self._sampling(),
                           config.slo_class)  # fmt: skip
        gamma = fused_mode_gamma(config)
        output: list[int] = []
        logprobs: list[TokenLogprobs] = []  # --logprobs (centralized): one per output token
        if ready is not None:
            ready()
        arrival = self.clock()
        first = None
        with self._shown() as shown:
            stream = self._stream(spec, fused, gamma, logprobs.extend, shown.reconnecting)
            try:
                for chunk in stream:
                    if chunk and first is None:
                        first = self.clock()
                    output.extend(chunk)
                    if shown.push(chunk):
                        break  # a stop sequence: the stream is cancelled on the server
            finally:
                stream.close()
            finish = self.clock()
            shown.end()
        request = RequestRecord(
            session_id, config.client_id, config.slo_class, 0, arrival,
            first if first is not None else finish, finish, len(self.prompt), len(output),
            0, 0, 0,
        )  # fmt: skip
        outcome = _cut(Outcome(tuple(output), request, logprobs=tuple(logprobs)), shown)
        if config.logprobs is not None:
            print(*logprob_lines(outcome.output, outcome.logprobs, self.tokenizer), sep="\n")
        return outcome

    def _stream(
        self, spec: Any, fused: bool, gamma: int, on_logprobs: Callable[..., None],
        on_reconnect: Callable[..., None],
    ) -> Generator[tuple[int, ...]]:  # fmt: skip
        """The server-side generation's chunks (their log-probabilities to ``on_logprobs``),
        its first retried while the server is unreachable, for ``first_open_retry_s``, a
        stream the server lost gone on from what it committed (said to ``on_reconnect``),
        within ``--retry-timeout-s`` and the progress budget
        (:func:`~edgespec.runtime.edge.server_side.resumed_chunks`)."""
        from edgespec.runtime.edge.progress import ProgressBudget
        from edgespec.runtime.edge.server_side import resumed_chunks

        config = self.config
        budget = ProgressBudget(config.max_reconnects, config.progress_timeout_s)
        retry_s = (self.first_open_retry_s, config.retry_timeout_s)
        return resumed_chunks(self.verifier, spec, fused, gamma, on_logprobs, self.clock,
                              retry_s, budget, on_reconnect=on_reconnect)  # fmt: skip

    def _tree_max_nodes(self) -> int:
        """``tree_max_nodes``, or the server's ``max_draft_tokens`` when a tree's is more
        (said on stderr)."""
        max_nodes = self.config.tree_max_nodes
        limit = self.verifier.max_draft_tokens() if self.config.tree is not None else None
        if limit is None or max_nodes <= limit:
            return int(max_nodes)
        print(f"edgespec draft: tree_max_nodes {max_nodes} exceeds the server's "
              f"max_draft_tokens {limit}; using {limit}", file=sys.stderr)  # fmt: skip
        return int(limit)

    def distributed(
        self, draft: Any, vocab_size: int, window: Any, stop: Any, keep_rounds: bool,
        ready: Callable[[], None] | None = None,
    ) -> Outcome:  # fmt: skip
        """Draft here, verify on the server (through the emulated link when configured);
        ``ready`` is called just before the first round, once the drafter is built."""
        from edgespec.config import ConfigError
        from edgespec.runtime.backends.base import hidden_state_drafter, stopping_drafter
        from edgespec.runtime.commands.closed_whole import closed_whole
        from edgespec.runtime.edge.draft_backends import make_drafter
        from edgespec.runtime.edge.drafter import DraftOptions, generate
        from edgespec.runtime.edge.progress import ProgressBudget
        from edgespec.runtime.wire.drafter_clients import close_timeout_s
        from edgespec.runtime.wire.emulated_link import wrap_verifier

        config = self.config
        model = None if draft is None else draft.model
        drafter = make_drafter(config.draft, model, vocab_size, config.lookup, config.tree,
                               config.tree_min_prob, self._tree_max_nodes())  # fmt: skip
        if stop is not None:
            try:
                stopping_drafter(drafter)
            except ValueError as exc:
                raise ConfigError("stop_predictor", str(exc)) from None
        semantic = config.semantic_request()
        if semantic is not None:
            try:
                hidden_state_drafter(drafter)
            except ValueError as exc:
                raise ConfigError("verification", str(exc)) from None
        budget = ProgressBudget(config.max_reconnects, config.progress_timeout_s)
        # a lost session is reopened for up to retry_timeout_s
        shown, logprobs = self._shown(), list[TokenLogprobs]()
        options = DraftOptions(self._session_id(), config.client_id, config.slo_class,
                               config.retry_timeout_s, progress=budget,
                               first_open_retry_s=self.first_open_retry_s,
                               on_reconnect=shown.reconnecting, on_resend=shown.resending,
                               on_logprobs=logprobs.extend)  # fmt: skip
        # the link: itself unless a link_* setting; its closes whole within their deadline
        close_s = close_timeout_s(config.request_timeout_s)
        linked = closed_whole(wrap_verifier(self.verifier, config), close_s)
        if ready is not None:
            ready()
        with shown:
            result = generate(linked, drafter, self.prompt, self._sampling(), options, window,
                              shown.push, stop=stop, semantic=semantic)  # fmt: skip
            shown.end()
        sent = None
        if stop is not None:
            sent = (result.request.num_drafted, sum(x.draft_passes for x in result.rounds))
        outcome = _cut(Outcome(result.output_token_ids, result.request, result.rounds, sent,
                               result.semantic, tuple(logprobs)), shown)  # fmt: skip
        if config.logprobs is not None:
            print(*logprob_lines(outcome.output, outcome.logprobs, self.tokenizer), sep="\n")
        return outcome


def _cut(outcome: Outcome, shown: Shown) -> Outcome:
    """``outcome`` as its text returned it: at a stop sequence (``--stop``) or stop token
    (``stop_token_ids``, ``--chat``'s end of turn), the output and its count cut to the
    tokens the text took (the stop token and those committed past it not counted), as the
    endpoint's ``completion_tokens``; otherwise unchanged."""
    num = shown.num_text_tokens
    if not shown.stopped or num is None:
        return outcome
    request = dataclasses.replace(outcome.request, num_output_tokens=num)
    return dataclasses.replace(outcome, output=outcome.output[:num], request=request,
                               logprobs=outcome.logprobs[:num])  # fmt: skip


def fused_mode_gamma(config: Any) -> int:
    """``--mode fused``'s γ: the window's ``gamma`` parameter (``--gamma``), else 4."""
    return int(config.window.params.get("gamma", 4))
