"""The FastAPI app: ``/v1/models`` (and ``/v1/models/{id}``), ``/v1/completions``,
``/v1/chat/completions``, ``/health``, ``/ready`` (:mod:`.health`), ``/metrics`` (the GET
routes answer HEAD too), vLLM's tokenizer routes (:mod:`.tokenizer_routes`); every
refusal an OpenAI error body (:mod:`.errors`)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from edgespec.runtime.edge.reconnect import Cancelled
from edgespec.runtime.errors import RequestError
from edgespec.runtime.openai_api.access import Access, add_access
from edgespec.runtime.openai_api.admission import Admission, ClientHold, Concurrency
from edgespec.runtime.openai_api.body import check_content_type, read_body
from edgespec.runtime.openai_api.choices import run_prompts
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.errors import (
    ApiError,
    clip,
    from_request_error,
    json_response,
    unknown_model,
)
from edgespec.runtime.openai_api.generation import PreparedRequest, prepare
from edgespec.runtime.openai_api.health import Health
from edgespec.runtime.openai_api.in_flight import Accepted, InFlight, endpoint_stopping
from edgespec.runtime.openai_api.messages import prompt_size
from edgespec.runtime.openai_api.prompt_batch import is_batch, of_prompt, parse_requests
from edgespec.runtime.openai_api.prompts import needs_tokenizer
from edgespec.runtime.openai_api.request_checks import check_logprob_volume
from edgespec.runtime.openai_api.request_metrics import RequestMetrics
from edgespec.runtime.openai_api.responses import Shape, model_entry, model_list
from edgespec.runtime.openai_api.schema import Defaults, Limits, ParsedRequest, decode_body
from edgespec.runtime.openai_api.server_watch import ServerWatch
from edgespec.runtime.openai_api.streaming import Running, Work, sse
from edgespec.runtime.openai_api.tokenizer_routes import add_tokenizer_routes
from edgespec.runtime.openai_api.tokenizing import TOKENIZE_QUEUE_PROMPTS, PromptLine, run_holding
from edgespec.runtime.openai_api.waits import client_left, first_item, waited, whole

LOG = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ApiConfig:
    """The endpoint's model id (what requests must name), defaults and limits, and who may
    call it."""

    model_id: str
    defaults: Defaults = field(default_factory=Defaults)
    limits: Limits = field(default_factory=Limits)
    concurrency: Concurrency = field(default_factory=Concurrency.for_device)
    access: Access = field(default_factory=Access)

    def __post_init__(self) -> None:
        if self.defaults.max_tokens > self.limits.max_tokens:
            raise ValueError(f"the default max_tokens {self.defaults.max_tokens} is over the "
                             f"limit of {self.limits.max_tokens}: every request without "
                             "max_tokens would be refused")  # fmt: skip


@dataclass(frozen=True, slots=True)
class Lines:
    """Where a request waits: for the tokenizer, then for a worker; the requests in flight,
    for a stopping endpoint; the servers' health (told of failures; none to wait for: 503);
    how the admitted ones ended, by mode (``/metrics``)."""

    prompts: PromptLine
    admission: Admission
    in_flight: InFlight
    health: Health
    requests: RequestMetrics

    async def metrics(self) -> str:
        """``/metrics``: the queues, how the admitted requests ended, the servers' states."""
        text = self.admission.metrics() + self.prompts.metrics() + self.requests.metrics()
        return text + await self.health.metrics()


READ_METHODS = ("GET", "HEAD")
"""The methods of the routes that only read: a HEAD answered as the GET, status and headers
(``Content-Length`` too), no body (RFC 9110 §9.3.2); FastAPI's ``app.get`` made it a 405."""


def api_error(exc: BaseException) -> ApiError:
    """Any failure of a request as an :class:`ApiError`."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, RequestError):
        return from_request_error(exc)
    if isinstance(exc, ClientDisconnect):
        return client_left()
    if isinstance(exc, Cancelled):  # its client gone (unanswered) or the endpoint stopping
        return endpoint_stopping()
    # what a request can get wrong is an ApiError by now: anything else is the endpoint's
    LOG.error("internal error answering a request", exc_info=exc)
    return ApiError(500, f"internal error: {type(exc).__name__}: {clip(str(exc))}",
                    kind="server_error")  # fmt: skip


def _failed(exc: BaseException, setup: EdgeSetup, lines: Lines, streamed: bool) -> ApiError:
    """``exc`` as answered (``streamed``: as the error event of a stream answered 200), told
    to the logs of what no client fixes (.throttle, .outages)."""
    error = api_error(exc)
    setup.refusals.note(error, streamed)
    lines.health.watch.note(error, streamed)
    return error


def error_response(exc: BaseException, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """``exc``'s OpenAI error response (:func:`.errors.json_response`), with its headers and
    ``headers`` (an ``Allow``, say)."""
    return json_response(api_error(exc), headers)


async def _body(request: Request, limits: Limits) -> dict[str, Any]:
    """The JSON body, of a request that says it is JSON in UTF-8 (else a 415)."""
    check_content_type(request.headers.get("content-type", ""))
    return decode_body(await read_body(request, limits.max_body_bytes))


async def _prepared(
    request: Request, setup: EdgeSetup, api: ApiConfig, parsed: ParsedRequest, line: PromptLine
) -> PreparedRequest:
    """``parsed`` tokenized and its window policy made, before it waits for a worker (a bad
    one is a 400 now), off the event loop (an AWC window reads its weights): a text or chat
    prompt waits its turn for the tokenizer (:mod:`.tokenizing`), token ids do not."""
    if not needs_tokenizer(parsed.prompt):
        return await asyncio.to_thread(prepare, setup, parsed, api.limits)
    await waited(request, line.acquire(prompt_size(parsed.prompt)), line.release)
    return await run_holding(line, partial(prepare, setup, parsed, api.limits))


async def _complete(
    request: Request,
    setup: EdgeSetup,
    api: ApiConfig,
    chat: bool,
    lines: Lines,
    place: Accepted,
    hold: ClientHold,
) -> Response:
    arrived_s = setup.clock()
    body = await _body(request, api.limits)
    batch = parse_requests(body, chat, api.defaults, api.limits)  # a request per prompt
    parsed = batch[0]
    if parsed.model != api.model_id:
        raise unknown_model(parsed.model, api.model_id)
    prepared = []
    for index, one in enumerate(batch):
        try:
            prepared.append(await _prepared(request, setup, api, one, lines.prompts))
        except ApiError as exc:
            raise (of_prompt(index, exc) if is_batch(body, chat) else exc) from None
    check_logprob_volume([(one.request, len(one.prompt_ids)) for one in prepared])  # a batch's
    work: Work = lines.requests.timed(partial(run_prompts, setup, tuple(prepared)), parsed.mode,
                                      arrived_s)  # fmt: skip
    await lines.health.refuse_if_hopeless(setup.config.retry_timeout_s)  # 503: no server
    admission = lines.admission

    def release() -> None:
        admission.release()
        hold.leave()

    await waited(request, admission.acquire(), release)  # 429: queue full
    try:
        lines.in_flight.check_open()  # 503: the endpoint is stopping
        running = Running(work, admission.executor, release)
        admission.started()
    except BaseException:
        release()
        raise
    lines.in_flight.started(running, place)
    shape = Shape.new(parsed.model, chat, parsed.include_usage, parsed.n * len(batch))
    if not parsed.stream:
        return JSONResponse(shape.whole(await whole(request, running)))
    try:
        first = await first_item(request, running)
    except BaseException:
        running.cancel.set()
        raise
    if first[0] == "error":
        raise first[1]
    events = sse(running, first, shape, lambda e: _failed(e, setup, lines, streamed=True).body())
    return StreamingResponse(events, media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache"})  # fmt: skip


def _client_address(request: Request) -> str:
    """Who sent ``request``, as the admission counts clients: its peer's address."""
    return request.client.host if request.client is not None else "unknown"


async def _answer(
    request: Request, setup: EdgeSetup, api: ApiConfig, chat: bool, lines: Lines
) -> Response:
    """A completion, or the OpenAI error body of whatever went wrong; in flight until then."""
    try:
        with lines.in_flight.accepted() as place:
            hold = lines.admission.hold(_client_address(request))  # 429: the client's cap
            try:
                return await _complete(request, setup, api, chat, lines, place, hold)
            except BaseException:
                hold.leave()  # else its generation's end counts it out
                raise
    except Exception as exc:
        return json_response(_failed(exc, setup, lines, streamed=False))


def build_app(
    setup: EdgeSetup,
    api: ApiConfig,
    in_flight: InFlight | None = None,
    clock: Callable[[], float] = time.monotonic,
    wall_clock: Callable[[], float] = time.time,
) -> FastAPI:
    """The endpoint over ``setup`` (the drafter's models and verification servers, each
    call to them watched: :mod:`.server_watch`, on ``clock`` and ``wall_clock``), its
    requests in flight kept in ``in_flight`` (for the one who stops it)."""
    app = FastAPI(title="edgespec", docs_url=None, redoc_url=None, openapi_url=None)
    created = int(wall_clock())
    admission = Admission(api.concurrency)
    prompts = PromptLine(TOKENIZE_QUEUE_PROMPTS * api.limits.max_prompt_chars)
    watch = ServerWatch(setup.config.servers, clock, wall_clock, setup.answered_at_start)
    health = Health(watch, setup.verifiers, admission, clock)
    setup = dataclasses.replace(setup, verifiers=health.clients, known_down=health.known_down)
    lines = Lines(prompts, admission, in_flight or InFlight(), health, RequestMetrics(setup.clock))

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
        where = f"{request.method} {clip(request.url.path)}"
        return error_response(ApiError(exc.status_code, f"{where}: {exc.detail}"), exc.headers)

    @app.api_route("/v1/models", methods=list(READ_METHODS))
    async def models() -> JSONResponse:
        return JSONResponse(model_list(api.model_id, created))

    @app.api_route("/v1/models/{name:path}", methods=list(READ_METHODS))
    async def model(name: str) -> JSONResponse:
        if name != api.model_id:
            return error_response(unknown_model(name, api.model_id))
        return JSONResponse(model_entry(api.model_id, created))

    @app.api_route("/health", methods=list(READ_METHODS))
    async def alive() -> JSONResponse:
        return await health.answer(readiness=False)

    @app.api_route("/ready", methods=list(READ_METHODS))
    async def ready() -> JSONResponse:
        return await health.answer(readiness=True)

    @app.api_route("/metrics", methods=list(READ_METHODS))
    async def metrics() -> Response:
        return Response(await lines.metrics(), media_type="text/plain; version=0.0.4")

    add_tokenizer_routes(app, setup, api.model_id, api.limits, prompts, _body, error_response,
                         lambda request: admission.hold(_client_address(request)))  # fmt: skip

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        return await _answer(request, setup, api, False, lines)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        return await _answer(request, setup, api, True, lines)

    add_access(app, api.access)
    return app
