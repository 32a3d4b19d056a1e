"""``edgespec draft --serve-openai HOST:PORT``: the endpoint under uvicorn, in a thread of
its own (:class:`ApiThread`, also what tests start on loopback), until Ctrl-C or SIGTERM
(:mod:`.stopping`)."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from edgespec.errors import UserInputError
from edgespec.runtime.messages import ServerHealth
from edgespec.runtime.openai_api.access import Access, unguarded_warning
from edgespec.runtime.openai_api.admission import Concurrency
from edgespec.runtime.openai_api.app import ApiConfig, build_app
from edgespec.runtime.openai_api.connections import (
    HEAD_TIMEOUT_S,
    MAX_CONNECTIONS,
    WRITE_TIMEOUT_S,
    RefuseAmbiguousFraming,
    bounded_protocol,
)
from edgespec.runtime.openai_api.descriptors import (
    ACCEPT_BACKLOG,
    AcceptErrorLog,
    FileBudget,
    file_budget,
    raise_open_file_limit,
)
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.in_flight import InFlight
from edgespec.runtime.openai_api.messages import longest_token_chars
from edgespec.runtime.openai_api.schema import Defaults, Limits
from edgespec.runtime.openai_api.server_facts import check_one_model, described, learn
from edgespec.runtime.openai_api.stopping import Stopped, StopSignals, serve_until_stopped
from edgespec.runtime.openai_api.throttle import Throttle


class ApiThread:
    """uvicorn serving ``app`` on ``host:port`` (0: an ephemeral port, in ``port`` once
    started) from a daemon thread: ``ApiThread(app, "127.0.0.1").start()``, ``stop()``.
    Its connections are bounded (:mod:`.connections`: how many, how long a request head
    may take, how long written bytes may wait for the client to read them, one body
    length); ``max_connections`` is capped by the open-file limit
    (:func:`.descriptors.file_budget`; ``OSError`` when it leaves no room), the result in
    ``budget``; one peer address holds at most ``max_per_address`` (``None``: a quarter of
    the budget's). What clients can make it log at line rate (failed ``accept()`` calls,
    malformed requests) is throttled on ``log_clock`` (:mod:`.throttle`)."""

    def __init__(
        self,
        app: Any,
        host: str,
        port: int = 0,
        head_timeout_s: float = HEAD_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
        log_clock: Callable[[], float] = time.monotonic,
        write_timeout_s: float = WRITE_TIMEOUT_S,
        max_per_address: int | None = None,
    ) -> None:
        import uvicorn

        self.budget = file_budget(max_connections)
        self._log_clock = log_clock
        protocol = bounded_protocol(head_timeout_s, self.budget.max_connections,
                                    refusals=Throttle(clock=log_clock),
                                    write_timeout_s=write_timeout_s,
                                    max_per_address=max_per_address)  # fmt: skip
        # proxy_headers off: a client is its peer's address, whatever X-Forwarded-For says
        config = uvicorn.Config(RefuseAmbiguousFraming(app), host=host, port=port, http=protocol,
                                log_level="warning", lifespan="off", backlog=ACCEPT_BACKLOG,
                                proxy_headers=False)  # fmt: skip
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)
        self.host = host
        self.port = port

    async def _serve(self) -> None:
        asyncio.get_running_loop().set_exception_handler(AcceptErrorLog(clock=self._log_clock))
        await self._server.serve()

    def start(self, timeout_s: float = 30.0) -> ApiThread:
        """Serve; raises ``OSError`` when the server does not start (its port in use, say)."""
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise OSError(f"the OpenAI-compatible endpoint did not start on "
                              f"{self.host}:{self.port}")  # fmt: skip
            time.sleep(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    def wait(self) -> None:
        self._thread.join()

    @property
    def alive(self) -> bool:
        """Whether it still serves (or still finishes its connections, once stopping)."""
        return self._thread.is_alive()

    def begin_stop(self) -> None:
        """Close the listening socket and the idle connections; the others finish."""
        self._server.should_exit = True

    def stop(self) -> None:
        self.begin_stop()
        self._thread.join(timeout=30)


def connections_told(budget: FileBudget, raised: tuple[int, int] | None) -> str:
    """The start-up line's part on connections: their cap, and what set it."""
    told = f"at most {budget.max_connections} connections"
    if budget.max_connections < MAX_CONNECTIONS:
        told += (f" (the open-file limit {budget.soft_limit} less {budget.reserved} kept for "
                 f"the process)")  # fmt: skip
    if raised is not None:
        told += f"; open-file limit raised from {raised[0]} to {raised[1]}"
    return told


def parse_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) of ``--serve-openai``."""
    from edgespec.config import ConfigError

    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ConfigError("serve_openai", f"expected HOST:PORT, got {address!r}")
    return host.strip("[]"), int(port)


def concurrency(
    max_running: int | None, max_queued: int | None, max_per_client: int | None = None
) -> Concurrency:
    """``--openai-max-concurrent``, ``--openai-max-queued`` (as many as running when not
    given) and ``--openai-max-per-client`` (no cap when not given), sized to the device
    when not given (:meth:`Concurrency.for_device`)."""
    from edgespec.config import ConfigError

    sized = Concurrency.for_device()
    running = sized.max_running if max_running is None else max_running
    queued = running if max_queued is None else max_queued
    if queued < 0:
        raise ConfigError("openai_max_queued", f"must be >= 0, got {queued}")
    return Concurrency(running, queued, max_per_client)


def check_serve_flags(mode: str, compare: bool, records: str | None, stop: Any,
                      config: Any) -> None:  # fmt: skip
    """What ``--serve-openai`` cannot combine with, refused before anything loads: a fused
    mode (its requests are distributed or centralized, ``edgespec.mode``), an emulated link
    with ``--mode centralized`` (no drafted round crosses it)."""
    from edgespec.config import ConfigError
    from edgespec.runtime.wire.emulated_link import check_link_mode

    if mode == "fused":
        raise ConfigError("mode", "--serve-openai runs requests distributed or centralized "
                          "(edgespec.mode), not fused: drop --mode fused")  # fmt: skip
    check_link_mode(config, mode)
    for flag, given in (("--compare", compare), ("--records", records), ("--stop-*", stop)):
        if given:
            raise ConfigError("serve_openai", f"{flag} is for one prompt: drop it")
    if config.verification != "exact":
        raise ConfigError("verification", "--serve-openai is lossless: exact verification only")


def check_limits(max_new_tokens: int, limits: Limits) -> None:
    """``--max-new-tokens`` is the ``max_tokens`` of a request that gives none: over
    ``--openai-max-tokens``, every such request would be refused, so it is refused here."""
    from edgespec.config import ConfigError

    if max_new_tokens > limits.max_tokens:
        raise ConfigError("max_new_tokens", f"{max_new_tokens} is the max_tokens of a request "
                          f"that gives none, over --openai-max-tokens {limits.max_tokens}: "
                          "lower --max-new-tokens or raise --openai-max-tokens")  # fmt: skip


def check_limit_fits(max_tokens: int, context: int | None) -> None:
    """``--openai-max-tokens`` that the target's context (the servers' smallest; ``None``:
    none says) cannot hold after even a one-token prompt: a request could never get it, nor
    (:func:`check_limits`) the ``--max-new-tokens`` of one that gives none, which is not
    over it; so it is refused here."""
    if context is not None and max_tokens + 1 > context:
        raise UserInputError(f"--openai-max-tokens: {max_tokens} is over what the target's "
                             f"context of {context} tokens holds after a one-token prompt: "
                             f"lower it to {context - 1} or below")  # fmt: skip


def _setup(
    config: Any, verifier: Any, draft: Any, tokenizer: Any, vocab_size: int,
    told: dict[str, ServerHealth] | None = None, drafts: bool = True,
) -> EdgeSetup:  # fmt: skip
    """The shared state of every request: one client per server (and the routing policy
    across several), what the servers' Health reports (:func:`.server_facts.learn`: the
    tree capped at their block limit, requests beyond their context or block limit, or of
    an SLO class they lack, refused before they run), and the config's own window and SLO
    class checked against it; several must serve one model, and each that answers must take
    the token. ``told``: what each server's Health said as the command reached them
    (:class:`~edgespec.runtime.commands.draft_connect.Reached`), not asked again (``None``:
    asked here)."""
    from edgespec.policies.registry import build_policy
    from edgespec.runtime.wire.drafter_clients import drafter_clients

    verifiers: tuple[Any, ...] = (verifier,)
    routing = None
    if len(config.servers) > 1:
        verifiers = drafter_clients(config)
        routing = build_policy("routing", config.routing.name, config.routing.params)
    if told is None:
        told = described(config.servers, verifiers)
    if len(verifiers) > 1:  # the one --server had its token checked as it was reached
        for address, client in zip(config.servers, verifiers, strict=True):
            if address in told:
                client.check_credentials()
    check_one_model(told)
    facts = learn(config, told, drafts)
    max_nodes = min(config.tree_max_nodes, facts.max_draft_tokens or config.tree_max_nodes)
    model = None if draft is None else draft.model
    return EdgeSetup(config, model, tokenizer, vocab_size, max_nodes, verifiers, routing,
                     facts.max_context_tokens, facts.max_draft_tokens, facts.slo_classes,
                     facts.target_name, answered_at_start=frozenset(told),
                     drafts=drafts, runs_fused_rounds=facts.runs_fused_rounds)  # fmt: skip


def serve_openai(
    address: str,
    config: Any,
    verifier: Any,
    draft: Any,
    tokenizer: Any,
    vocab_size: int,
    limits: Limits,
    concurrency: Concurrency | None = None,
    told: dict[str, ServerHealth] | None = None,
    mode: str = "distributed",
    access: Access | None = None,
) -> Stopped:
    """Serve until Ctrl-C or SIGTERM, then stop (:mod:`.stopping`), refusing requests beyond
    ``limits`` (a text prompt's characters bounded by the tokenizer's longest token) and
    generations beyond ``concurrency`` (default: sized to the device); the model id is the
    name of the server's target; ``told``: the servers' Health as the command reached them
    (``None``: asked here); ``mode``: the requests' default ``edgespec.mode`` (centralized:
    ``draft`` is ``None`` and every request is the server's own decoding); ``access``: its
    API key and allowed web origins (default: neither)."""
    host, port = parse_address(address)
    limits = dataclasses.replace(limits, chars_per_token=longest_token_chars(tokenizer))
    setup = _setup(config, verifier, draft, tokenizer, vocab_size, told, mode == "distributed")
    check_limit_fits(limits.max_tokens, setup.max_context_tokens)
    _warm_up_draft(setup)
    model_id = setup.target_name or "edgespec"
    defaults = Defaults(config.max_new_tokens, config.temperature, config.slo_class, mode)
    admits = concurrency or Concurrency.for_device()
    in_flight = InFlight()
    access = access or Access()
    app = build_app(setup, ApiConfig(model_id, defaults, limits, admits, access), in_flight)
    raised = raise_open_file_limit(MAX_CONNECTIONS)  # process-wide: here, as it starts
    with StopSignals() as signals:  # from the start: a signal as it starts stops it too
        try:
            server = ApiThread(app, host, port).start()
        except OSError as exc:  # the port taken since it was checked, no descriptors left
            raise UserInputError(str(exc)) from None
        said = f"{admits.told()}; {connections_told(server.budget, raised)}{access.told()}"
        url = f"http://{host}:{server.port}/v1"
        decodes = "" if setup.drafts else "; every request centralized, the server decoding"
        say(f"OpenAI-compatible endpoint on {url} (model {model_id!r}{decodes}; {said})")
        if (warning := unguarded_warning(host, access)) is not None:
            say(warning)
        return serve_until_stopped(server, in_flight, signals.wait, say)


def _warm_up_draft(setup: EdgeSetup) -> None:
    """A draft model's first pass before the endpoint listens, on a drafter made as a
    request's is (:func:`~edgespec.runtime.backends.warm_up.warm_up_drafter`); none for
    prompt lookup (no model) or llama.cpp (each request's drafter has a context of its
    own)."""
    from edgespec.runtime.backends.llamacpp_draft import LlamaCppDraftModel

    model = setup.draft_model
    if setup.drafts and model is not None and not isinstance(model, LlamaCppDraftModel):
        from edgespec.runtime.backends.warm_up import warm_up_drafter
        from edgespec.runtime.openai_api.decoding import request_drafter

        warm_up_drafter(request_drafter(setup), setup.vocab_size)


def say(line: str) -> None:
    """One line of the endpoint's on stderr."""
    print(f"edgespec draft: {line}", file=sys.stderr, flush=True)
