"""simulate()'s own choices: a run that streams its records (keep_records=False) keeps
no round records, so it takes the lazy fast path even when the scenario asks for them
(fewer events, the same metrics); paused_gc restores the collector as it found it."""

from __future__ import annotations

import gc

from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import paused_gc, simulate
from tests.sim.helpers import tiny_scenario


def test_a_streamed_run_drops_round_records_and_takes_the_lazy_path() -> None:
    base = ["policies.window={name: static, params: {gamma: 3}}", "duration_s=5.0"]
    recording = scenario_from_dict(tiny_scenario(), [*base, "record_rounds=true"])
    plain = scenario_from_dict(tiny_scenario(), [*base, "record_rounds=false"])
    streamed = simulate(recording, keep_records=False)
    lazy = simulate(plain, keep_records=False)
    kept = simulate(recording)
    assert kept.rounds and not streamed.rounds
    assert streamed.metrics == lazy.metrics
    assert streamed.num_rounds == lazy.num_rounds == kept.num_rounds
    # no ARRIVE events on the lazy path: one per round fewer than the recording run
    assert streamed.num_events == lazy.num_events
    assert kept.num_events - streamed.num_events >= kept.num_rounds


def test_paused_gc_leaves_a_disabled_collector_disabled() -> None:
    was = gc.isenabled()
    try:
        gc.disable()
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
        gc.enable()
        with paused_gc():
            assert not gc.isenabled()
        assert gc.isenabled()
    finally:
        if was:
            gc.enable()
        else:
            gc.disable()
