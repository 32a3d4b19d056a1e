"""One ``edgespec bench serve`` from flags to report: the server (the user's, or one the
bench builds and starts), the prompts, the load, the server's counters before and after,
the sessions it still holds, and the check against centralized decoding."""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edgespec.core.sampling_params import SamplingParams
from edgespec.errors import UserInputError
from edgespec.runtime.errors import RequestError
from edgespec.runtime.loadgen.check import CheckResult, centralized_outputs, check_outputs
from edgespec.runtime.loadgen.outcome import RunOutcome
from edgespec.runtime.loadgen.report import LoadReport, run_metrics
from edgespec.runtime.loadgen.run import LoadRun, new_run_tag
from edgespec.runtime.loadgen.scrape import ScrapeError, compared, scrape, server_figures
from edgespec.runtime.loadgen.server_process import ServerProcess, free_port
from edgespec.runtime.loadgen.spec import LoadSpec, Mode, ServerAccess


def build_synthetic(args: argparse.Namespace, out: Path) -> tuple[str, str | None]:
    """The synthetic target (and, for ``--draft truncated``, its first 2 layers as the
    draft) saved under ``out``; returns their directories."""
    from edgespec.models.library_output import library_output
    from edgespec.runtime.testing import layer_truncated_copy, synthetic_target

    target = synthetic_target(args.synthetic_layers, args.synthetic_hidden)
    draft_dir = None
    with library_output(False):
        target.save_pretrained(out / "target")
        if args.draft == "truncated":
            layer_truncated_copy(target, 2).save_pretrained(out / "draft")
            draft_dir = str(out / "draft")
    return str(out / "target"), draft_dir


def _speed(tokens_per_s: float | None) -> str:
    return "none" if tokens_per_s is None else f"{tokens_per_s:g}"


def setup_row(args: argparse.Namespace, load: LoadSpec, target: str) -> dict[str, Any]:
    """The run's settings as the report shows them."""
    return {
        "target": target,
        "backend": args.backend if args.server is None else "the server's",
        "batching": _batching(args),
        "mode": load.mode,
        "draft": load.draft if load.mode == "distributed" else "none",
        "clients": load.num_clients,
        "procs": load.num_procs,
        "arrivals": load.arrivals if load.rate_per_s is None else f"poisson {load.rate_per_s}/s",
        "duration_s": load.duration_s,
        "slo_mix": ",".join(
            f"{s.name}:{_speed(s.target_tokens_per_s)}:{s.share:g}" for s in load.slo_mix
        ),
        "prompts": args.prompts,
        "max_new_tokens": load.max_new_tokens,
        "sampling": _sampling_label(load.request_sampling),
        "gamma": load.gamma,
        "faults": args.faults or "none",
    }


def _sampling_label(sampling: SamplingParams) -> str:
    """What the load's requests sample with, as the report shows it: ``greedy``, or the
    fields away from their defaults (``temperature 0.8, top_p 0.9``); the length aside."""
    plain = SamplingParams(max_new_tokens=sampling.max_new_tokens)
    moved = [_shown(f.name, getattr(sampling, f.name)) for f in dataclasses.fields(sampling)
             if getattr(sampling, f.name) != getattr(plain, f.name)]  # fmt: skip
    if sampling.greedy:
        moved.insert(0, "greedy")
    return ", ".join(moved)


def _shown(name: str, value: Any) -> str:
    """A sampling field and its value as the flag takes it (``logit_bias 5:-100,7:2``; a
    switch on, its name alone: ``ignore_eos``)."""
    if value is True:
        return name
    if isinstance(value, tuple) and value and isinstance(value[0], tuple):
        return f"{name} " + ",".join(f"{token}:{bias:g}" for token, bias in value)
    if isinstance(value, tuple):
        return f"{name} " + ",".join(str(v) for v in value)
    return f"{name} {value}"


def _batching(args: argparse.Namespace) -> str:
    """The bench's own server's batching policy (with wisp's profile), or the server's."""
    if args.server is not None:
        return "the server's"
    return args.batching if args.profile is None else f"{args.batching} (profile {args.profile})"


def check_gamma(gamma: int, limit: int | None, modes: tuple[Mode, ...]) -> None:
    """``--gamma`` within the server's ``max_draft_tokens`` (``None``: a server that does
    not say) when a mode drafts: the server would refuse every request's first block."""
    if limit is not None and "distributed" in modes and gamma > limit:
        raise UserInputError(f"--gamma {gamma} exceeds the server's max_draft_tokens {limit}")


class BenchSession:
    """Set up, run and report one load (``say``: progress lines)."""

    def __init__(
        self, args: argparse.Namespace, load: LoadSpec, tmp: Path, say: Callable[[str], None]
    ) -> None:
        self._args = args
        self._load = load
        self._tmp = tmp
        self._say = say
        self._server: ServerProcess | None = None
        self._metrics_url: str | None = args.metrics_url
        self._target = args.target if args.server is None else f"server {args.server}"
        # the model each client process loads: a --draft name or directory (the synthetic
        # target's truncated copy once built); None for n-gram drafts
        self._draft_dir: str | None = None if args.draft in ("ngram", "truncated") else args.draft

    def _start_server(self) -> str:
        args = self._args
        target = args.target
        if target == "synthetic":
            target, truncated = build_synthetic(args, self._tmp)
            self._draft_dir = truncated or self._draft_dir
            from edgespec.runtime.testing import describe_synthetic

            self._target = describe_synthetic(args.synthetic_layers, args.synthetic_hidden)
        metrics_port = free_port()
        serve = ["--target", target, "--batching", args.batching, "--backend", args.backend,
                 "--threads", str(args.server_threads), "--prometheus-port", str(metrics_port),
                 "--set", f"session_timeout_s={args.session_timeout_s}"]  # fmt: skip
        if args.profile is not None:  # checked with --batching before the target was built
            serve += ["--profile", args.profile]
        if args.guard_ms is not None:
            serve += ["--guard-ms", str(args.guard_ms)]
        for s in self._load.slo_mix:
            serve += ["--slo-class", f"{s.name}={_speed(s.target_tokens_per_s)}"]
        log_dir = args.log_dir or self._tmp
        log_dir.mkdir(parents=True, exist_ok=True)
        kept = args.log_dir is not None  # the temporary directory goes at exit
        self._server = ServerProcess(serve, free_port(), log_dir / "server.log", kept)
        where = f" (log {log_dir}/server.log)" if kept else ""
        self._say(f"starting edgespec serve on {self._server.address}{where}")
        seconds = self._server.start()
        self._say(f"server ready after {seconds:.1f} s")
        self._metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
        return self._server.address

    def _tokenizer(self) -> Any:
        if self._args.server is None and self._args.target == "synthetic":
            return None
        from edgespec.models.loading import load_tokenizer

        name = self._args.target
        if self._args.server is not None:
            with self._access.connected() as client:
                name = client.target_name() or ""
        return load_tokenizer(name) if name else None

    def run(self, modes: tuple[Mode, ...] = ("distributed",)) -> tuple[LoadReport, ...]:
        """The load once per mode, one after another against the same server."""
        from edgespec.runtime.loadgen.prompts import prompt_texts, prompt_token_ids

        args = self._args
        texts = prompt_texts(args.prompts)  # before the server: a set it cannot read fails first
        try:  # a stop while its own server starts stops that server too
            if args.server is None:  # its max_draft_tokens is the config's: before it starts
                from edgespec.runtime.server.config import ServerConfig

                check_gamma(self._load.gamma, ServerConfig().max_draft_tokens, modes)
                self._access = ServerAccess(self._start_server())
            else:
                self._access = ServerAccess(args.server, args.auth_token, args.tls_ca,
                                            args.tls_server_name)  # fmt: skip
            with self._access.connected(timeout_s=10.0) as client:
                vocab_size = int(client.vocab_size())
                check_gamma(self._load.gamma, client.max_draft_tokens(), modes)
            prompts = prompt_token_ids(texts, self._tokenizer(), vocab_size,
                                       args.max_prompt_tokens)  # fmt: skip
            return tuple(self._run_mode(m, prompts, vocab_size) for m in modes)
        finally:
            if self._server is not None:
                self._server.stop()

    def _run_mode(
        self, mode: Mode, prompts: tuple[tuple[int, ...], ...], vocab_size: int
    ) -> LoadReport:
        load = dataclasses.replace(self._load, mode=mode)
        before = self._scrape()
        tag = new_run_tag()  # this run's request ids: TAG.client-000.0.3, TAG.w0.0.7
        self._say(f"{mode}: {load.num_clients} clients in {load.num_procs} processes, "
                  f"{load.duration_s:g} s of arrivals; request ids {tag}.*")  # fmt: skip
        outcome = LoadRun(load, self._access, prompts, vocab_size, self._server,
                          self._draft_dir, self._say, tag).run()  # fmt: skip
        after = self._scrape(after_load=True)
        orphaned = self._orphaned_sessions()
        return self._report(load, outcome, prompts, before, after, orphaned)

    def _scrape(self, after_load: bool = False) -> dict[str, float] | None:
        """The ``--metrics-url`` page (``None`` without one). Unreadable before the load it
        stops the bench (a usage error); after it, the run's report stands without the
        server's counters, and a line says why."""
        if self._metrics_url is None:
            return None
        try:
            return scrape(self._metrics_url)
        except ScrapeError as exc:
            if not after_load:
                raise
            self._say(f"{exc}; the server's counters are not compared")
            return None

    def _orphaned_sessions(self) -> int | None:
        """The sessions the server holds once the load ended; the bench's own server is
        given its idle timeout (plus 5 s) to reclaim a killed client's. A server that no
        longer answers (it died in the run) is ``None``: the load's report is kept, a line
        says why the sessions were not counted."""
        deadline = time.monotonic() + (self._args.session_timeout_s + 5 if self._server else 0)
        try:
            with self._access.connected(timeout_s=10.0) as verifier:
                while (n := int(verifier.stats().num_sessions)) and time.monotonic() < deadline:
                    time.sleep(0.5)
        except RequestError as exc:
            self._say(f"the server's sessions were not counted: {exc.code.value}: {exc.message}")
            return None
        return n

    def _report(
        self,
        load: LoadSpec,
        outcome: RunOutcome,
        prompts: tuple[tuple[int, ...], ...],
        before: dict[str, float] | None,
        after: dict[str, float] | None,
        orphaned: int | None,
    ) -> LoadReport:
        check = None
        sampled = not self._load.request_sampling.greedy
        if sampled and not self._args.no_check and outcome.finished:
            self._say("outputs not checked against centralized decoding: sampled requests "
                      "(--temperature > 0) draw their own tokens")  # fmt: skip
        elif not self._args.no_check and outcome.finished:
            indices = sorted({f.prompt_index for f in outcome.finished})
            self._say(f"checking {len(outcome.finished)} outputs against centralized decoding "
                      f"of their {len(indices)} prompts")  # fmt: skip
            try:
                refs = centralized_outputs(self._access, prompts, indices,
                                           self._load.request_sampling,
                                           self._load.slo_mix[0].name, outcome.run_tag)  # fmt: skip
                check = check_outputs(outcome.finished, refs)
            except RequestError as exc:  # the load's report is kept; the bench fails after it
                failure = f"{exc.code.value}: {exc.message}"
                check = CheckResult(len(outcome.finished), 0, (), failure)
        rows, note = compared(before, after, outcome)
        server, server_note = server_figures(before, after, outcome)
        return LoadReport(setup_row(self._args, load, self._target), outcome,
                          run_metrics(outcome), check, orphaned, rows, note, server,
                          server_note)  # fmt: skip
