"""WISP Eq. 21 on hand-built rounds: ρ against the moving mean of recent batches."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from edgespec.core.types import RoundRecord
from edgespec.metrics.attribution import attribute_violations


def rr(
    rid: str, done: float, verify: float, queue: float, deadline: float | None, server: int = 0
) -> RoundRecord:
    start = done - verify - queue
    return RoundRecord(
        rid, 0, start, done + 0.01, 0.0, 0.0, queue, verify, 0.01, 4, 2, 3, 1, server, deadline
    )


# server 0: four batches ending at 1, 2, 3, 4.4 s taking 0.1, 0.1, 0.1, 0.4 s (a spike)
ROUNDS = [
    rr("a", 1.0, 0.1, 0.0, 2.0),  # met
    rr("b", 2.0, 0.1, 0.8, 1.5),  # violated after a long wait in a normal batch
    rr("c", 2.0, 0.1, 0.0, None),  # same batch, no target
    rr("d", 3.0, 0.1, 0.0, 3.0),  # ends exactly at its deadline: met
    rr("e", 4.4, 0.4, 0.1, 4.2),  # violated in the spike batch
    rr("f", 4.4, 0.4, 0.0, 4.3),  # same batch, violated
    rr("g", 9.0, 2.0, 0.0, 1.0, server=1),  # another server's only batch: ρ = 1
]


def test_rho_and_dominance() -> None:
    att = attribute_violations(reversed(ROUNDS), window=20)
    assert att.num_rounds_with_deadline == 6
    got = {v.request_id: (round(v.rho, 6), v.compute_dominant) for v in att.violated}
    spike = round(0.4 / ((0.1 + 0.1 + 0.1 + 0.4) / 4), 6)
    assert got == {"b": (1.0, False), "e": (spike, True), "f": (spike, True), "g": (1.0, False)}
    assert att.num_compute_dominant == 2 and att.compute_share == 0.5
    v = next(v for v in att.violated if v.request_id == "b")
    assert (v.queue_s, v.verify_s, v.server_id) == (0.8, 0.1, 0)


def test_window_limits_the_moving_mean() -> None:
    att = attribute_violations(ROUNDS, window=2)  # spike: 0.4 / mean(0.1, 0.4) = 1.6
    e = next(v for v in att.violated if v.request_id == "e")
    assert math.isclose(e.rho, 1.6) and e.compute_dominant
    att = attribute_violations(ROUNDS, window=2, threshold=1.7)
    assert att.num_compute_dominant == 0


def test_a_mixed_fused_batch_is_one_batch_of_its_whole_pass() -> None:
    """The simulator's fused round in a batch with a distributed one: its verify_s leaves
    out the co-located draft's part of the pass (0.1 of 0.3 s), the distributed round's is
    the whole pass. One batch of 0.3 s (it was two, 0.3 and 0.2, one pulling the mean
    down): ρ = 0.3 / mean(0.3, 0.3, 0.3) = 1, not 0.3 / mean(0.3, 0.3, 0.2, 0.3) > 1."""
    fused = dataclasses.replace(rr("y", 2.0, 0.2, 0.0, None), draft_s=0.1, fused=True)
    fused = dataclasses.replace(fused, start_s=2.0 - 0.3)  # its pass ends at 2.0 s too
    rounds = [rr("w", 1.0, 0.3, 0.0, None), rr("x", 2.0, 0.3, 0.0, None), fused,
              rr("z", 3.0, 0.3, 0.5, 2.9)]  # fmt: skip
    assert fused.server_done_s == 2.0
    (late,) = attribute_violations(rounds).violated
    assert (late.request_id, late.rho, late.compute_dominant) == ("z", 1.0, False)


def test_nothing_violated_and_bad_window() -> None:
    att = attribute_violations(ROUNDS[:1])
    assert att.num_violated == 0 and att.compute_share is None
    with pytest.raises(ValueError, match="window must be >= 1"):
        attribute_violations(ROUNDS, window=0)


def test_scatter_plot_is_written(tmp_path: Path) -> None:
    from edgespec.metrics.plots import plot_violation_attribution

    path = tmp_path / "attribution.png"
    plot_violation_attribution(path, attribute_violations(ROUNDS))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_rounds_are_taken_in_time_order_server_by_server() -> None:
    # server 1: ids not in time order; x's spike batch is the last of three
    rounds = [
        rr("z", 1.0, 0.1, 0.0, 2.0, server=1),
        rr("y", 2.0, 0.1, 0.0, 3.0, server=1),
        rr("x", 3.0, 0.4, 0.0, 2.5, server=1),
        rr("a", 1.0, 0.2, 0.5, 0.5),
    ]
    att = attribute_violations(rounds, window=2)  # x: 0.4 / mean(0.1, 0.4) = 1.6
    assert [(v.server_id, v.request_id) for v in att.violated] == [(0, "a"), (1, "x")]
    assert math.isclose(att.violated[1].rho, 1.6) and att.violated[1].compute_dominant


def test_compute_dominant_needs_rho_above_the_threshold() -> None:
    att = attribute_violations(ROUNDS, threshold=1.0)  # b and g have ρ = 1.0 exactly
    got = {v.request_id: (v.rho, v.compute_dominant) for v in att.violated}
    assert got["b"] == (1.0, False) and got["g"] == (1.0, False)
    assert att.num_compute_dominant == 2


def test_rho_is_one_when_the_batches_took_no_time() -> None:
    att = attribute_violations([rr("a", 1.0, 0.0, 0.5, 0.5)])
    assert [(v.rho, v.compute_dominant) for v in att.violated] == [(1.0, False)]
