"""The session ids a drafter makes from its ``client_id``: ``edgespec draft``'s
``<client_id>-<12 hex>`` and the OpenAI endpoint's ``<client_id>-oai-<12 hex>``
(:func:`new_session_id`), then a reconnect's ``<first id>#r<reconnect>.<attempt>``
(:func:`~edgespec.runtime.edge.reconnect.reconnect_session_id`); and the most characters
they add to the client id, which ``DrafterConfig`` holds within the server's limit on a
session id (:func:`config_client_id_problem`, by the one rule
:func:`~edgespec.runtime.validation.client_id_problem`)."""

from __future__ import annotations

import math
import uuid
from typing import Any

from edgespec.core.wire_limits import UINT32_LIMIT
from edgespec.runtime.edge.reconnect import RETRY_BACKOFF_S, reconnect_session_id
from edgespec.runtime.validation import client_id_problem

ID_HEX_CHARS = 12
"""The random hex digits that make a generation's session id new."""

ENDPOINT_TAG = "-oai-"
"""What the OpenAI endpoint's session ids carry between the client id and the hex."""


def new_session_id(client_id: str, endpoint: bool = False) -> str:
    """A new generation's session id: ``<client_id>-<12 hex>``, or the endpoint's
    ``<client_id>-oai-<12 hex>``."""
    return f"{client_id}{ENDPOINT_TAG if endpoint else '-'}{uuid.uuid4().hex[:ID_HEX_CHARS]}"


def client_id_suffix_chars(max_reconnects: int, retry_s: float, retry_backoff_s: float) -> int:
    """The most characters a drafter's session ids add to its client id: the endpoint's
    ``-oai-<12 hex>`` (the longer start), then, with reconnects allowed, a reconnect's
    ``#r<n>.<attempt>`` at the largest of each it can reach. A generation makes at most
    ``max_reconnects`` reconnects in a row without a committed token
    (:mod:`~edgespec.runtime.edge.progress`), and commits fewer than 2**32 tokens (the
    wire's uint32): fewer than ``max_reconnects`` * 2**32 reconnects; a reconnect tries
    again every ``retry_backoff_s`` for at most ``retry_s`` (the lower of the retry and the
    progress timeouts), so at most ``retry_s / retry_backoff_s + 2`` times."""
    start = len(ENDPOINT_TAG) + ID_HEX_CHARS
    if max_reconnects == 0:
        return start
    attempts = math.floor(retry_s / retry_backoff_s) + 2
    return start + len(reconnect_session_id("", max_reconnects * UINT32_LIMIT, attempts))


def config_client_id_problem(config: Any) -> str | None:
    """What is wrong with a ``DrafterConfig``'s ``client_id`` as the start of every
    session id it makes (:func:`client_id_suffix_chars` with its ``max_reconnects`` and
    the lower of its ``retry_timeout_s`` and ``progress_timeout_s``); ``None``: nothing."""
    reconnects = config.max_reconnects
    retry_s = min(config.retry_timeout_s, config.progress_timeout_s)
    told = f"the endpoint's '{ENDPOINT_TAG}<{ID_HEX_CHARS} hex>'"
    if reconnects:
        told += (f" and, with max_reconnects {reconnects} and retries of up to {retry_s:g} s, "
                 "a reconnect's '#r<n>.<attempt>'")  # fmt: skip
    suffix = client_id_suffix_chars(reconnects, retry_s, RETRY_BACKOFF_S)
    return client_id_problem(config.client_id, suffix, told)
