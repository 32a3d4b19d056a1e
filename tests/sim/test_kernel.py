"""The discrete-event kernel (sim/kernel.py) by hand: what both simulator paths share, so
no fast-versus-straightforward comparison can see a change to it."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.sim.kernel import EventQueue, Handler, priority


def _recorder(num_kinds: int) -> tuple[list[Handler], list[tuple[float, int, Any]]]:
    """Handlers that log ``(time, kind, payload)`` for each of ``num_kinds`` kinds."""
    seen: list[tuple[float, int, Any]] = []

    def handler(kind: int) -> Handler:
        return lambda t, payload: seen.append((t, kind, payload))

    return [handler(k) for k in range(num_kinds)], seen


def test_priority_packs_the_kind_above_the_entity() -> None:
    assert priority(0, 0) == 0
    assert priority(3, 7) == (3 << 32) | 7
    assert priority(1, 0) > priority(0, 2**32 - 1)  # every entity of a kind before the next


def test_an_event_at_the_horizon_runs_and_a_later_one_waits() -> None:
    handlers, seen = _recorder(2)
    q = EventQueue()
    q.push(2.0, 0, 0, "at the horizon")
    q.push(2.5, 0, 0, "after it")
    q.push_arrival(2.0, 1, 0, "arrival at the horizon")
    q.push_arrival(2.25, 1, 0, "arrival after it")
    q.run(handlers, until_s=2.0)
    assert seen == [(2.0, 0, "at the horizon"), (2.0, 1, "arrival at the horizon")]
    assert (len(q), q.num_events, q.now_s) == (2, 2, 2.0)
    assert [e[3] for e in q.heap] == ["after it"]
    assert [e[3] for e in q.arrivals_heap] == ["arrival after it"]


@pytest.mark.parametrize("arrival_only", [True, False])
def test_a_lone_event_at_the_horizon_runs(arrival_only: bool) -> None:
    """Either heap alone holding the event at ``until_s`` keeps the loop going."""
    handlers, seen = _recorder(1)
    q = EventQueue()
    (q.push_arrival if arrival_only else q.push)(1.5, 0, 0, "x")
    q.run(handlers, until_s=1.5)
    assert seen == [(1.5, 0, "x")] and len(q) == 0


def test_the_two_heaps_interleave_as_one_by_time_kind_entity_and_insertion() -> None:
    """Arrivals wait in a heap of their own; the run takes them exactly where one heap of
    every event would: a REQUEST-like kind 4 runs after kind 3 and before kind 5 at the
    same time, whichever heap each sits in."""
    handlers, seen = _recorder(6)
    q = EventQueue()
    q.push(1.0, 5, 0, "dispatch")
    q.push_arrival(1.0, 4, 9, "request 9")
    q.push(1.0, 3, 2, "wake")
    q.push_arrival(1.0, 4, 1, "request 1")
    q.push_arrival(0.5, 4, 0, "early request")
    q.push(1.0, 4, 5, "request-kind event in the round heap")
    q.push(0.75, 0, 0, "batch end")
    q.run(handlers, until_s=5.0)
    assert [p for _, _, p in seen] == [
        "early request",
        "batch end",
        "wake",
        "request 1",
        "request-kind event in the round heap",
        "request 9",
        "dispatch",
    ]


@pytest.mark.parametrize("how", ["push", "push_arrival", "raw_push"])
def test_each_push_breaks_ties_by_entity_then_by_insertion(how: str) -> None:
    """Same time and kind: the lower entity first, whatever the insertion order; same
    entity too: insertion order (never the payloads' own order)."""
    handlers, seen = _recorder(2)
    q = EventQueue()
    push = {"push": q.push, "push_arrival": q.push_arrival, "raw_push": q.raw_push()}[how]
    push(1.0, 1, 9, "z: entity 9")
    push(1.0, 1, 2, "y: entity 2, first")
    push(1.0, 1, 2, "b: entity 2, second")
    push(1.0, 1, 2, "a: entity 2, third")
    push(1.0, 0, 30, "kind 0")
    q.run(handlers, until_s=1.0)
    assert [p for _, _, p in seen] == [
        "kind 0",
        "y: entity 2, first",
        "b: entity 2, second",
        "a: entity 2, third",
        "z: entity 9",
    ]


def test_entities_use_all_32_bits_without_reaching_the_kind() -> None:
    """A fleet of more than 65,536 devices: a large entity neither changes the handler
    nor overtakes a higher kind at the same time."""
    handlers, seen = _recorder(2)
    q = EventQueue()
    q.push(1.0, 1, 0, "kind 1")
    q.push(1.0, 0, 2**32 - 1, "kind 0, entity 2**32 - 1")
    q.push_arrival(1.0, 0, 70_000, "kind 0, entity 70000")
    q.run(handlers, until_s=1.0)
    assert seen == [
        (1.0, 0, "kind 0, entity 70000"),
        (1.0, 0, "kind 0, entity 2**32 - 1"),
        (1.0, 1, "kind 1"),
    ]


@pytest.mark.parametrize("how", ["push", "push_arrival"])
def test_an_event_in_the_past_is_refused_and_one_at_the_present_accepted(how: str) -> None:
    handlers, _ = _recorder(1)
    q = EventQueue()
    q.push(1.0, 0, 0, None)
    q.run(handlers, until_s=1.0)
    push = q.push if how == "push" else q.push_arrival
    with pytest.raises(ValueError) as error:
        push(0.5, 0, 0, None)
    assert str(error.value) == "event at 0.5 scheduled in the past (now 1.0)"
    push(1.0, 0, 0, "now")  # the present is not the past
    assert len(q) == 1


def test_handlers_may_schedule_at_their_own_time_and_counts_add_up_over_runs() -> None:
    seen: list[tuple[float, str]] = []
    progress: list[float] = []
    q = EventQueue()

    def first(t: float, payload: Any) -> None:
        seen.append((t, payload))
        if payload == "a":
            q.push(t, 1, 0, "b, pushed at its own time")
            q.push_arrival(t, 1, 1, "c, an arrival at the same time")

    handlers: list[Handler] = [first, lambda t, p: seen.append((t, p))]
    q.push(0.25, 0, 0, "a")
    q.run(handlers, until_s=1.0, on_progress=progress.append)
    assert seen == [
        (0.25, "a"),
        (0.25, "b, pushed at its own time"),
        (0.25, "c, an arrival at the same time"),
    ]
    assert (q.num_events, q.now_s, progress) == (3, 0.25, [0.25])  # one callback per batch
    q.push(3.0, 0, 0, "d")
    q.run(handlers, until_s=4.0, on_progress=progress.append)
    assert (q.num_events, q.now_s, progress) == (4, 3.0, [0.25, 3.0])


def test_progress_is_called_as_simulated_time_passes_not_per_65536_events() -> None:
    """10,000 events over 10 s: a call at each due look (every 256 events, each 1/1000 of
    the horizon later than the last), then one at the end; old: one call, at the end."""
    q = EventQueue()
    for i in range(10_000):
        q.push_arrival(i / 1000, 0, 0, None)
    progress: list[float] = []
    q.run([lambda t, p: None], until_s=10.0, on_progress=progress.append)
    assert progress == [(256 * k - 1) / 1000 for k in range(1, 40)] + [9.999]


@pytest.mark.parametrize(
    ("window", "handler_set"), [("static", "fast"), ("awc", "inlined")]
)  # fmt: skip
def test_a_runs_progress_advances_on_the_fast_engine(window: str, handler_set: str) -> None:
    """The bundled default scenario, 10 s: the fast handler set packs rounds into a few
    thousand events (the whole 60 s run is 13,449 events, 11,598 with ``awc``), which the
    old 65,536 events between calls left at 0 % until the end."""
    from edgespec.sim.handler_sets import build_loop, choose_handler_set
    from edgespec.sim.setup.scenario import load_scenario
    from edgespec.sim.simulator import StreamSink, build_state

    scenario = load_scenario(None, ["duration_s=10", f"policies.window.name={window}"])
    state = build_state(scenario, StreamSink())
    choice = choose_handler_set(state)
    loop = build_loop(state, choice)
    loop.arrivals.start(state.q)
    progress: list[float] = []
    state.q.run(loop.handlers(), scenario.duration_s, progress.append)
    assert choice.name == handler_set
    inside = [t for t in progress if 0.0 < t < scenario.duration_s]
    assert len(inside) >= 5, progress
    assert progress == sorted(set(progress))  # strictly increasing
    assert progress[-1] == state.q.now_s <= scenario.duration_s
