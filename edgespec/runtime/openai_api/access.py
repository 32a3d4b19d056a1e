"""Who may call the endpoint (:class:`Access`): an API key that every route but the probes
needs (``Authorization: Bearer KEY``, as OpenAI's clients send it; vLLM's ``--api-key``),
checked before the app reads a byte of the body, and the web origins a browser may call it
from (CORS; none by default, so a page elsewhere cannot read its answers).

Both are ASGI middleware around the app (:func:`add_access`): CORS outside, so that a
browser's preflight (``OPTIONS`` with ``Access-Control-Request-Method``) is answered without
a key and a refusal still carries the CORS headers the page needs to read it; then the key."""

from __future__ import annotations

import hmac
import ipaddress
import re
from dataclasses import dataclass

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from edgespec.runtime.openai_api.errors import ApiError, json_response, shown

OPEN_PATHS = frozenset({"/health", "/ready", "/metrics"})
"""The routes no key guards: liveness, readiness and Prometheus's page (as the verification
server's ``/metrics``), which a prober or scraper reaches without the applications' key."""

ORIGIN = re.compile(r"https?://[^/\s?#]+")
"""A web origin as a browser sends it: scheme and host (and port), no path."""


@dataclass(frozen=True, slots=True)
class Access:
    """``api_key``: the key requests must send (``None``: any client that reaches the
    address); ``allowed_origins``: the web origins allowed to call from a browser (``*``:
    any; empty: none)."""

    api_key: str | None = None
    allowed_origins: tuple[str, ...] = ()

    def told(self) -> str:
        """What the endpoint's start line adds, e.g. ``; an API key required`` (nothing
        for an endpoint open to any local client, the default)."""
        said = ["an API key required"] if self.api_key is not None else []
        if self.allowed_origins:
            origins = ("any web origin" if "*" in self.allowed_origins
                       else ", ".join(self.allowed_origins))  # fmt: skip
            said.append(f"browsers may call it from {origins}")
        return "".join(f"; {part}" for part in said)


def unguarded_warning(host: str, access: Access) -> str | None:
    """The warning for an endpoint listening beyond this machine (``host`` no loopback
    address) without an API key; ``None`` when it is guarded or local."""
    if access.api_key is not None or host == "localhost":
        return None
    try:
        if ipaddress.ip_address(host.strip("[]")).is_loopback:
            return None
    except ValueError:  # a host name: it may resolve beyond this machine
        pass
    return (f"warning: the endpoint listens on {host}, beyond this machine, without "
            "--openai-api-key: any client that reaches it generates on your verification "
            "servers with this device's token")  # fmt: skip


def origin_list(text: str) -> tuple[str, ...]:
    """``--openai-allowed-origins``' value: comma-separated origins (``https://host[:port]``)
    or ``*``; a ``ValueError`` saying which one is not an origin."""
    origins = tuple(part.strip() for part in text.split(","))
    for origin in origins:
        if origin != "*" and ORIGIN.fullmatch(origin) is None:
            raise ValueError(f"{origin!r} is not a web origin: give scheme and host, e.g. "
                             "https://chat.example.com or http://localhost:3000, or *")  # fmt: skip
    return origins


def key_refusal(header: bytes | None, api_key: str) -> ApiError | None:
    """Why a request with ``Authorization`` ``header`` (``None``: none sent) is refused, a
    401 that never quotes the key it expected; ``None``: it sends ``Bearer`` ``api_key``
    (compared in constant time)."""
    if header is None:
        return ApiError(401, "this endpoint needs an API key: send the header "
                        "'Authorization: Bearer KEY' with the key its --openai-api-key "
                        "gives")  # fmt: skip
    scheme, _, token = header.decode("latin-1").strip().partition(" ")
    if scheme.lower() != "bearer":
        return ApiError(401, f"the Authorization header must be 'Bearer KEY', got the scheme "
                        f"{shown(scheme, 20)}")  # fmt: skip
    if not hmac.compare_digest(token.strip().encode("latin-1"), api_key.encode("latin-1")):
        return ApiError(401, "incorrect API key", code="invalid_api_key")
    return None


class ApiKeyCheck:
    """ASGI middleware: a request for any route but :data:`OPEN_PATHS` without ``api_key``
    is answered 401 (``WWW-Authenticate: Bearer``) before the app sees it."""

    def __init__(self, app: ASGIApp, api_key: str) -> None:
        self.app = app
        self.api_key = api_key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        header = next((v for k, v in scope["headers"] if k == b"authorization"), None)
        refusal = key_refusal(header, self.api_key)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        response = json_response(refusal, {"WWW-Authenticate": "Bearer"})
        await response(scope, receive, send)


def add_access(app: FastAPI, access: Access) -> None:
    """``access`` around ``app``: the key check, then CORS outside it."""
    if access.api_key is not None:
        app.add_middleware(ApiKeyCheck, api_key=access.api_key)
    if access.allowed_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(access.allowed_origins),
            allow_methods=["GET", "HEAD", "POST"],
            allow_headers=["*"],  # OpenAI's JS client sends X-Stainless-* headers too
            max_age=600,
        )
