"""A drafter's ``client_id`` is bounded so that every session id it makes from it stays
within the server's 128 characters (``validation.MAX_IDENTIFIER_CHARS``): the endpoint's
``-oai-<12 hex>`` and a reconnect's ``#r<n>.<attempt>`` at the most of each it can reach.
A client_id of 112 characters made every HTTP request a 400 about a session_id the client
never sent; reconnect suffixes pushed shorter ones over mid-generation."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.config import ConfigError, from_dict
from edgespec.core.wire_limits import UINT32_LIMIT
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.edge.reconnect import RETRY_BACKOFF_S, reconnect_session_id
from edgespec.runtime.edge.session_ids import client_id_suffix_chars, new_session_id
from edgespec.runtime.validation import MAX_IDENTIFIER_CHARS

RECONNECT_TOLD = (
    "the endpoint's '-oai-<12 hex>' and, with max_reconnects 5 and retries of up to 30 s, a "
    "reconnect's '#r<n>.<attempt>' add up to 34 to it, and a session id has at most 128"
)


def _config(**fields: Any) -> DrafterConfig:
    return from_dict(DrafterConfig, {"server": "127.0.0.1:1", **fields})


@pytest.mark.parametrize("length", [0, 95, 112, 128], ids=["empty", "one-over", "112", "128"])
def test_a_client_id_its_session_ids_would_push_over_the_limit_is_refused(length: int) -> None:
    with pytest.raises(ConfigError) as info:
        _config(client_id="c" * length)
    assert info.value.path == "client_id"
    assert info.value.message == f"must be 1 to 94 characters, got {length}: {RECONNECT_TOLD}"


def test_the_longest_client_id_taken_makes_ids_within_the_limit() -> None:
    """94 characters, defaults: 5 reconnects in a row without progress, each retried for
    30 s every 50 ms (602 tries at most); fewer than 2**32 tokens commit."""
    client_id = _config(client_id="c" * 94).client_id
    first = new_session_id(client_id, endpoint=True)
    assert len(first) == 94 + 17 and len(new_session_id(client_id)) == 94 + 13
    attempts = int(30 / RETRY_BACKOFF_S) + 2
    longest = reconnect_session_id(first, 5 * UINT32_LIMIT, attempts)
    assert len(longest) == MAX_IDENTIFIER_CHARS == 128


def test_the_bound_follows_reconnects_and_retries() -> None:
    """No reconnects: the endpoint's suffix alone; a longer retry (or progress) timeout
    means more tries, more digits; absurd ones leave no room, said so."""
    assert client_id_suffix_chars(0, 30.0, RETRY_BACKOFF_S) == 17
    _config(client_id="c" * 111, max_reconnects=0)
    with pytest.raises(ConfigError) as info:
        _config(client_id="c" * 112, max_reconnects=0)
    assert info.value.message == (
        "must be 1 to 111 characters, got 112: the endpoint's '-oai-<12 hex>' add up to 17 to "
        "it, and a session id has at most 128"
    )
    # 86400 s: 1,728,002 tries (7 digits, 3 more than 602's): 4 characters less room
    assert client_id_suffix_chars(5, 86_400.0, RETRY_BACKOFF_S) == 38
    # the progress timeout (60 s) caps a reconnect's retries: 1,202 tries, one digit more
    _config(client_id="c" * 93, retry_timeout_s=86_400.0)
    with pytest.raises(ConfigError) as info:
        _config(retry_timeout_s=1e300, progress_timeout_s=1e300)
    assert info.value.message.startswith(
        "no client_id fits: the endpoint's '-oai-<12 hex>' and, "
        "with max_reconnects 5 and retries of up to 1e+300 s"
    )
