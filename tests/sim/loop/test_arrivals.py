"""Request arrivals (sim/arrivals.py) by hand: closed loop, Poisson and trace replay, each
checked against a replay of its documented draws from the ``workload`` stream. Both
simulator paths share this code, so no fast-versus-straightforward comparison sees it."""

from __future__ import annotations

from typing import Any

import numpy as np

from edgespec.core.types import Request
from edgespec.sim.kernel import EventQueue
from edgespec.sim.loop.arrivals import Arrivals
from edgespec.sim.model.entities import DeviceState
from edgespec.sim.model.layout import Layout
from edgespec.sim.model.rng import spawn_generator
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.setup.workload import TraceEntry
from tests.sim.helpers import tiny_scenario
from tests.sim.parts import build_entities, build_lengths

PROMPTS, OUTPUTS = (40, 120, 300, 75), (30, 80, 50, 120)  # tiny_scenario's length table
Offered = tuple[int, str, str, float, int, int, str, Any]


class _Run:
    """Arrivals of the tiny scenario (three devices) on a queue of their own."""

    def __init__(
        self,
        overrides: list[str],
        layout: Layout | None = None,
        trace: tuple[TraceEntry, ...] = (),
    ) -> None:
        base = ["auto_topology.devices.0.count=3", "workload.think_time_s=0.5"]
        scenario = scenario_from_dict(tiny_scenario(), [*base, *overrides])
        # the devices of the same fleet (only the workload differs): a trace is not read
        self.devices, _ = build_entities(scenario_from_dict(tiny_scenario(), base))
        self.offered: list[Offered] = []
        self.arrivals = Arrivals(
            scenario,
            self.devices,
            build_lengths(scenario),
            trace,
            self.offer,
            0,
            layout or Layout.whole(3, 2),
        )
        self.q = EventQueue()
        self.arrivals.start(self.q)

    def offer(self, dev: DeviceState, r: Request, seq: tuple[int, ...] | None, t: float) -> None:
        assert r.arrival_s == t
        self.offered.append(
            (
                dev.device_id,
                r.request_id,
                r.client_id,
                t,
                r.num_prompt_tokens,
                r.num_output_tokens,
                r.slo_class,
                seq,
            )
        )

    def run(self, until_s: float) -> list[Offered]:
        self.q.run([self.arrivals.on_request], until_s)
        return self.offered


def _lengths(rng: np.random.Generator, cap: int = 10**9) -> tuple[int, int]:
    i = int(rng.integers(len(PROMPTS)))
    return PROMPTS[i], min(OUTPUTS[i], cap)


def test_closed_loop_devices_start_within_the_ramp_and_return_after_thinking() -> None:
    """One draw per device for its first arrival (uniform over the 1 s ramp, in device
    order), a length pair per request when it arrives, an exponential think time when
    its device goes idle; outputs capped at max_output_tokens."""
    run = _Run(["workload.max_output_tokens=60"])
    slo = [d.slo_class for d in run.devices]
    assert slo == ["slow", "slow", "fast"]
    rng = spawn_generator(7, "workload", None)
    starts = [float(rng.uniform(0.0, 1.0)) for _ in range(3)]
    expected: list[Offered] = []
    for n, d in enumerate(sorted(range(3), key=starts.__getitem__)):
        expected.append((d, f"r{n}", str(d), starts[d], *_lengths(rng, 60), slo[d], None))
    assert run.run(1.0) == expected
    assert len(run.q) == 0
    run.arrivals.device_idle(run.devices[2], 4.0)
    back = 4.0 + float(rng.exponential(0.5))
    assert run.run(20.0)[3:] == [(2, "r3", "2", back, *_lengths(rng, 60), "fast", None)]
    run.arrivals.device_idle(run.devices[0], 20.0 - 1e-9)  # thinks past the end: no arrival
    assert len(run.q) == 0 and len(run.run(20.0)) == 4


def test_closed_loop_without_ramp_or_think_time_draws_only_lengths() -> None:
    """ramp_s = 0 starts every device at 0.0 and think_time_s = 0 brings a device back at
    once: neither draws; devices idle at the same time return in device order, and one
    idle at the very end still arrives."""
    run = _Run(["workload.ramp_s=0", "workload.think_time_s=0"])
    rng = spawn_generator(7, "workload", None)
    first = [(d, f"r{d}", str(d), 0.0, *_lengths(rng)) for d in range(3)]
    assert [o[:6] for o in run.run(0.0)] == first
    run.arrivals.device_idle(run.devices[2], 5.0)
    run.arrivals.device_idle(run.devices[1], 5.0)
    run.arrivals.device_idle(run.devices[0], 20.0)  # at the horizon: still in the run
    again = [(d, f"r{n}", str(d), t, *_lengths(rng)) for n, d, t in [(3, 1, 5.0), (4, 2, 5.0)]]
    again.append((0, "r5", "0", 20.0, *_lengths(rng)))
    assert [o[:6] for o in run.run(20.0)[3:]] == again


def test_poisson_arrivals_pick_any_device_then_lengths_then_the_next_gap() -> None:
    run = _Run(["workload.kind=poisson", "workload.think_time_s=0", "workload.rate_per_s=2"])
    run.arrivals.device_idle(run.devices[0], 1.0)  # no closed loop: nothing comes back
    rng = spawn_generator(7, "workload", None)
    expected: list[Offered] = []
    t = float(rng.exponential(0.5))
    while t <= 20.0:
        d = int(rng.integers(3))
        slo = run.devices[d].slo_class
        expected.append((d, f"r{len(expected)}", str(d), t, *_lengths(rng), slo, None))
        t += float(rng.exponential(0.5))
    assert run.run(20.0) == expected
    assert 25 < len(expected) < 60 and {o[0] for o in expected} == {0, 1, 2}


def test_a_trace_replays_every_entry_on_its_client_device() -> None:
    entries = (
        TraceEntry("a", 0.5, 10, 4, "1", acceptance_seq=(1, 0)),
        TraceEntry("b", 0.5, 11, 5, "2", slo_class="slow"),
        TraceEntry("c", 2.0, 12, 6, "5"),  # client 5 of 3 devices: device 2
        TraceEntry("d", 30.0, 13, 7, "0"),  # after the run
    )
    run = _Run(["workload={kind: trace, trace: not-read.jsonl}"], trace=entries)
    assert run.run(20.0) == [
        (1, "a", "1", 0.5, 10, 4, "slow", (1, 0)),
        (2, "b", "2", 0.5, 11, 5, "slow", None),  # the entry's class over the device's
        (2, "c", "5", 2.0, 12, 6, "fast", None),
    ]
    assert [e[3] for e in run.q.arrivals_heap] == [3]


def test_pinned_cells_draw_from_their_own_streams_and_number_their_requests() -> None:
    """Devices 0 and 2 in cell 0, device 1 in cell 1; in the whole scenario they are
    devices 10, 11, 12 (a shard): each cell has its own stream and request numbers."""
    layout = Layout((0, 1), (0, 1, 0), (0, 1), (10, 11, 12), (0, 1))
    run = _Run(["workload.think_time_s=0.5"], layout=layout)
    rngs = [spawn_generator(7, "workload", c) for c in (0, 1)]
    starts = [float(rngs[c].uniform(0.0, 1.0)) for c in (0, 1, 0)]
    offered = run.run(1.0)
    assert [o[0] for o in offered] == sorted(range(3), key=starts.__getitem__)
    by_device = {o[0]: o[1:6] for o in offered}
    cell0 = sorted((0, 2), key=starts.__getitem__)
    for n, d in enumerate(cell0):
        assert by_device[d] == (f"c0-r{n}", str(10 + d), starts[d], *_lengths(rngs[0]))
    assert by_device[1] == ("c1-r0", "11", starts[1], *_lengths(rngs[1]))
    run.arrivals.device_idle(run.devices[1], 2.0)
    back = 2.0 + float(rngs[1].exponential(0.5))
    assert run.run(20.0)[3][:6] == (1, "c1-r1", "11", back, *_lengths(rngs[1]))
