"""Request arrivals: closed-loop devices, Poisson, or trace replay (REQUEST events)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from edgespec.core.types import Request
from edgespec.sim.kernel import EventQueue
from edgespec.sim.model.entities import DeviceState
from edgespec.sim.model.layout import Layout
from edgespec.sim.model.rng import spawn_generator
from edgespec.sim.setup.lengths import LengthTable
from edgespec.sim.setup.scenario import Scenario, WorkloadConfig
from edgespec.sim.setup.workload import TraceEntry

Offer = Callable[[DeviceState, Request, "tuple[int, ...] | None", float], None]


class Arrivals:
    """Creates requests and hands them to devices through ``offer``.

    Closed loop: one REQUEST event per device (first at uniform [0, ramp_s)), the next one
    ``think_time_s`` (exponential mean) after the device's request finishes. Poisson: one
    chain of REQUEST events for the whole system, each to a uniformly random device.
    Trace: one chain over the trace's entries. All draws come from the ``workload``
    stream of the scenario seed; in a pinned scenario (:mod:`edgespec.sim.setup.cells`, closed
    loop only) each cell draws from its own, and numbers its requests ``c<cell>-r<n>``.
    """

    def __init__(
        self,
        scenario: Scenario,
        devices: list[DeviceState],
        lengths: LengthTable | None,
        trace: tuple[TraceEntry, ...],
        offer: Offer,
        request_kind: int,
        layout: Layout,
    ) -> None:
        self.scenario = scenario
        self.workload = scenario.workload
        until = scenario.workload.arrivals_until_s
        self.arrivals_end_s = scenario.duration_s if until is None else until
        self.devices = devices
        self.lengths = lengths
        self.trace = trace
        self.offer = offer
        self.kind = request_kind
        self.slot = layout.device_slot
        self.client_ids = [str(i) for i in layout.device_global]
        self.rngs = [spawn_generator(scenario.seed, "workload", c) for c in layout.cell_ids]
        self.rng = self.rngs[0]  # the only one unless the scenario is pinned (closed loop)
        self.prefixes = ["r" if c is None else f"c{c}-r" for c in layout.cell_ids]
        self.num_created = [0] * len(layout.cell_ids)
        self.q = EventQueue()

    def start(self, queue: EventQueue) -> None:
        self.q = queue
        wl = self.workload
        if wl.kind == "closed_loop":
            for dev in self.devices:
                rng = self.rngs[self.slot[dev.device_id]]
                t0 = float(rng.uniform(0.0, wl.ramp_s)) if wl.ramp_s > 0 else 0.0
                if t0 <= self.arrivals_end_s:
                    queue.push_arrival(t0, self.kind, dev.device_id, dev)
        elif wl.kind == "poisson":  # its first arrival within the window too, as the rest
            first = float(self.rng.exponential(1.0 / wl.rate_per_s))
            if first <= self.arrivals_end_s:
                queue.push_arrival(first, self.kind, 0, None)
        elif self.trace:
            queue.push_arrival(self.trace[0].arrival_s, self.kind, 0, 0)

    def on_request(self, t: float, payload: object) -> None:
        """REQUEST handler."""
        wl = self.workload
        if isinstance(payload, DeviceState):
            self.offer(payload, self._new_request(payload, t), None, t)
        elif wl.kind == "poisson":
            dev = self.devices[int(self.rng.integers(len(self.devices)))]
            self.offer(dev, self._new_request(dev, t), None, t)
            nxt = t + float(self.rng.exponential(1.0 / wl.rate_per_s))
            if nxt <= self.arrivals_end_s:
                self.q.push_arrival(nxt, self.kind, 0, None)
        else:
            assert isinstance(payload, int)
            entry = self.trace[payload]
            dev = self.devices[entry.device_index(len(self.devices))]
            request = Request(
                request_id=entry.request_id,
                client_id=entry.client_id,
                arrival_s=t,
                num_prompt_tokens=entry.num_prompt_tokens,
                num_output_tokens=entry.num_output_tokens,
                slo_class=entry.slo_class or dev.slo_class,
            )
            self.offer(dev, request, entry.acceptance_seq, t)
            if payload + 1 < len(self.trace):
                self.q.push_arrival(self.trace[payload + 1].arrival_s, self.kind, 0, payload + 1)

    def device_idle(self, dev: DeviceState, t: float) -> None:
        """A device finished its request and has nothing queued."""
        if self.workload.kind != "closed_loop":
            return
        nxt = t + think_time_s(self.workload, self.rngs[self.slot[dev.device_id]])
        if nxt <= self.arrivals_end_s:
            self.q.push_arrival(nxt, self.kind, dev.device_id, dev)

    def _new_request(self, dev: DeviceState, t: float) -> Request:
        assert self.lengths is not None
        slot = self.slot[dev.device_id]
        prompt, output = self.lengths.sample(self.rngs[slot])
        cap = self.workload.max_output_tokens
        if cap is not None:
            output = min(output, cap)
        number = self.num_created[slot]
        self.num_created[slot] = number + 1
        return Request(
            request_id=f"{self.prefixes[slot]}{number}",
            client_id=self.client_ids[dev.device_id],
            arrival_s=t,
            num_prompt_tokens=prompt,
            num_output_tokens=output,
            slo_class=dev.slo_class,
        )


def think_time_s(workload: WorkloadConfig, rng: np.random.Generator) -> float:
    """One think time of a closed-loop device: exponential with mean ``think_time_s``, or
    lognormal with that mean and coefficient of variation ``think_cv`` (σ² = ln(1 + cv²),
    μ = ln mean − σ²/2, as DSD-Sim draws it); at least ``think_min_s``."""
    mean = workload.think_time_s
    if mean <= 0:
        return workload.think_min_s
    if workload.think_distribution == "lognormal":
        sigma = math.sqrt(math.log1p(workload.think_cv**2))
        value = float(rng.lognormal(math.log(mean) - 0.5 * sigma * sigma, sigma))
    else:
        value = float(rng.exponential(mean))
    return max(workload.think_min_s, value)
