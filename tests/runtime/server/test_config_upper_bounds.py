"""ServerConfig and DrafterConfig numbers too large for where they go: each was accepted
and failed later (an OverflowError building the gRPC server or channel, every Health call
failing, every request timing out at once, inf on the wire); each is now refused with the
field, the bound and the value, and the bound itself is kept."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.config import ConfigError, from_dict
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.server.config import ServerConfig

SEMANTIC = {"draft": "tiny", "verification": "semantic", "threshold": 8}


def _error(cls: type[Any], data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        from_dict(cls, data)
    return str(info.value)


@pytest.mark.parametrize("value", [2**31, 10**15, 10**30])
def test_message_limits_fit_grpcs_c_int(value: int) -> None:
    assert _error(ServerConfig, {"max_message_bytes": value}) == (
        "config field 'max_message_bytes': must be <= 2,147,483,647 (gRPC takes it as a C "
        f"int), got {value}"
    )
    assert _error(DrafterConfig, {"max_message_bytes": value}) == (
        "config field 'max_message_bytes': must be in 1..2,147,483,647 (gRPC takes it as a C "
        f"int), got {value}"
    )
    assert _error(DrafterConfig, {"max_message_bytes": 0}) == (
        "config field 'max_message_bytes': must be in 1..2,147,483,647 (gRPC takes it as a C "
        "int), got 0"
    )
    kept = {"max_message_bytes": 2**31 - 1}
    assert from_dict(ServerConfig, kept).max_message_bytes == 2**31 - 1
    assert from_dict(DrafterConfig, kept).max_message_bytes == 2**31 - 1


@pytest.mark.parametrize("value", [2**32, 10**30])
def test_max_draft_tokens_fits_healths_uint32(value: int) -> None:
    assert _error(ServerConfig, {"max_draft_tokens": value}) == (
        "config field 'max_draft_tokens': must be <= 4,294,967,295 (Health reports it as a "
        f"uint32), got {value}"
    )
    assert from_dict(ServerConfig, {"max_draft_tokens": 2**32 - 1}).max_draft_tokens == 2**32 - 1


@pytest.mark.parametrize("value", [86_401.0, 1e12, 1e308, 10**30])
def test_request_timeout_is_at_most_a_day(value: float) -> None:
    assert _error(DrafterConfig, {"request_timeout_s": value}) == (
        f"config field 'request_timeout_s': must be at most 86,400 s (a day), got {value:g}"
    )
    assert from_dict(DrafterConfig, {"request_timeout_s": 86_400}).request_timeout_s == 86_400


@pytest.mark.parametrize("value", [2**32, 10**30])
def test_drafter_max_new_tokens_fits_the_wire(value: int) -> None:
    assert _error(DrafterConfig, {"max_new_tokens": value}) == (
        f"config field 'max_new_tokens': must be below 2**32 (the wire's uint32), got {value}"
    )
    assert from_dict(DrafterConfig, {"max_new_tokens": 2**32 - 1}).max_new_tokens == 2**32 - 1


@pytest.mark.parametrize("value", [1000.5, 1e39, 1e308, 10**30])
def test_temperature_is_at_most_a_thousand(value: float) -> None:
    assert _error(DrafterConfig, {"temperature": value}) == (
        f"config field 'temperature': must be at most 1000, got {value:g}"
    )
    assert from_dict(DrafterConfig, {"temperature": 1000.0}).temperature == 1000.0


def test_a_temperature_above_0_is_one_the_wire_carries() -> None:
    """1e-50 reached the server as 0 (greedy) while the drafter sampled at 1e-50."""
    assert _error(DrafterConfig, {"temperature": 1e-50}) == (
        "config field 'temperature': must not be below 1.175e-38 unless 0 (the wire's "
        "float32), got 1e-50"
    )
    assert from_dict(DrafterConfig, {"temperature": 2.0**-126}).temperature == 2.0**-126


@pytest.mark.parametrize("value", [1e9 + 1, 1e308, 10**30])
def test_channel_rtt_is_named_when_out_of_the_heads_range(value: float) -> None:
    # was reported against channel_uplink_mbps, in seconds
    data = {**SEMANTIC, "channel_uplink_mbps": 10.0, "channel_rtt_ms": value}
    assert _error(DrafterConfig, data) == (
        "config field 'channel_rtt_ms': must be at most 1,000,000,000 ms (the decision head's "
        f"RTT range), got {value:g}"
    )
    kept = from_dict(DrafterConfig, {**data, "channel_rtt_ms": 1e9}).semantic_request()
    assert kept is not None and kept.rtt_s == 1e6


UPLINK_RANGE = "must be in [1e-06, 1e+09] Mbit/s (1 bit/s to 1 Pbit/s) to be reported as the uplink"


@pytest.mark.parametrize("field", ["channel_uplink_mbps", "link_bandwidth_mbps"])
@pytest.mark.parametrize("value", [1e308, 10**30])
def test_the_uplink_is_named_with_its_value(field: str, value: float) -> None:
    # 1e308 Mbit/s was "uplink rate ... got inf" (its bit/s), 1e30 was kept
    assert _error(DrafterConfig, {**SEMANTIC, field: value}) == (
        f"config field '{field}': {UPLINK_RANGE}, got {value:g}"
    )
    kept = from_dict(DrafterConfig, {**SEMANTIC, field: 1e9}).semantic_request()
    assert kept is not None and kept.uplink_bps == 1e15


@pytest.mark.parametrize("value", [0.0, -5.0, 1e-9, float("nan")])
def test_a_channel_uplink_below_1_bit_per_s_is_named_not_replaced(value: float) -> None:
    """0 was taken for "not given": the emulated link's 500 Mbit/s reported in its place;
    -5 and 1e-9 said to give --channel-uplink-mbps, which was given."""
    data = {**SEMANTIC, "channel_uplink_mbps": value, "link_bandwidth_mbps": 500.0}
    assert _error(DrafterConfig, data) == (
        f"config field 'channel_uplink_mbps': {UPLINK_RANGE}, got {value:g}"
    )
