"""The per-device constants the inbound sets' BATCH_END (:mod:`edgespec.sim.fast.batch_end`)
reads instead of calling the link and the draft cost model: latency tables without
jitter and loss (``Link.latency_s``'s expressions, so the same floats), a draft-time memo,
and the link's jitter, loss rate and retransmission timeout; one entry per (link,
vocabulary, draft cost model), shared by the devices of a pool."""

from __future__ import annotations

from typing import NamedTuple

from edgespec.core.link_delay import DraftRows
from edgespec.sim.model.entities import DeviceState
from edgespec.sim.model.network import HEADER_BYTES, TOKEN_ID_BYTES, uplink_bytes
from edgespec.sim.state import SimState

KEY_BASE = 1 << 30
"""Draft-time memo key = context * base + γ when a policy chooses γ (γ < a request's
output tokens < 2**30)."""


class DeviceConstants(NamedTuple):
    """What the closure reads of a device's link and draft model, shared by a pool."""

    down_base: list[float]
    """Downlink latency without jitter and loss, by committed count."""
    up_base: list[float]
    """Uplink latency without jitter and loss, by γ."""
    draft_memo: dict[int, float]
    """``decode_steps_s`` by context * key base + γ."""
    neg_jitter_s: float
    loss_rate: float
    retransmit_s: float


def grow(
    tables: DeviceConstants, dev: DeviceState, draft_rows: DraftRows | None, gamma: int
) -> None:
    """Extend the latency tables to windows up to ``gamma``: the downlink latency by
    committed count and the uplink latency by γ, without jitter and loss
    (``Link.latency_s``'s expression: the same floats)."""
    down_base, up_base = tables[0], tables[1]
    link = dev.link
    rtt, bw, up_bw = link.rtt_s, link.bandwidth_bytes_per_s, link.up_bytes_per_s
    down_base.extend(
        0.5 * rtt + (HEADER_BYTES + TOKEN_ID_BYTES * (1 + c)) / bw
        for c in range(len(down_base), gamma + 2)
    )
    up_base.extend(
        0.5 * rtt + uplink_bytes(g, 0, dev.vocab_size, draft_rows) / up_bw
        for g in range(len(up_base), gamma + 1)
    )


def device_constants(
    dev: DeviceState, gamma_max: int, draft_rows: DraftRows | None
) -> DeviceConstants:
    """The latency tables (:func:`grow`), a draft-time memo, and the link's negated
    jitter, loss rate and retransmission timeout."""
    link = dev.link
    memo: dict[int, float] = {}  # decode_steps_s by context * key base + γ
    neg_jitter_s = -link.jitter_s  # `-j * x` is `(-j) * x`: the same float
    tables = DeviceConstants([], [], memo, neg_jitter_s, link.loss_rate, link.retransmit_timeout_s)
    grow(tables, dev, draft_rows, gamma_max)
    return tables


def per_device(state: SimState, gamma_max: int) -> list[DeviceConstants]:
    """One entry per (link, vocabulary, draft cost model), shared by the devices that have
    it (pools), so the hot loop touches little memory."""
    shared: dict[tuple[int, int, int], DeviceConstants] = {}
    found: list[DeviceConstants] = []
    for i, dev in enumerate(state.devices):
        assert dev.device_id == i, "devices are indexed by id"
        key = (id(dev.link), dev.vocab_size, id(dev.draft_cost))
        if key not in shared:
            shared[key] = device_constants(dev, gamma_max, state.draft_rows)
        found.append(shared[key])
    return found
