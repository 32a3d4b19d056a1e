"""The drafter loop's bookkeeping on hand-built rounds (no model, the generation of
:mod:`tests.runtime.edge.round_loop_setup`): the exact calls sent, round records, request
record, window observations, stop predictors and feature drafts. Reconnects and the
sessions a failing generation closes: test_round_loop_sessions.py."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from edgespec.core.types import RequestRecord, RoundRecord
from edgespec.policies.interfaces import WindowObservation
from edgespec.runtime.edge.rounds import draft_rng, play_round
from edgespec.runtime.messages import SessionSpec
from tests.runtime.edge.round_loop_setup import GREEDY, OUTPUT, PROMPT
from tests.runtime.edge.round_loop_setup import run_loop as _run
from tests.runtime.round_fakes import Clock, Drafter, FeatureDrafter, Recording, Verifier

SPEC = SessionSpec("s", "edge-0", PROMPT, GREEDY)


def _record(index: int, start: float, drafted: int, accepted: int, committed: int) -> RoundRecord:
    draft_s = 0.25 if drafted else 0.0
    return RoundRecord(
        request_id="s",
        round_index=index,
        start_s=start,
        end_s=start + draft_s + 1.0,
        draft_s=draft_s,
        uplink_s=0.3125,  # (1.0 − queue 0.125 − verify 0.25) / 2
        queue_s=0.125,
        verify_s=0.25,
        downlink_s=0.3125,
        num_drafted=drafted,
        num_accepted=accepted,
        num_committed=committed,
        batch_size=3,
    )


RECORDS = (_record(0, 0.0, 4, 2, 3), _record(1, 1.25, 3, 2, 3), _record(2, 2.5, 0, 0, 1))


def test_the_default_loop_sends_records_and_reports_exactly() -> None:
    clock = Clock()
    verifier = Verifier(clock)
    streamed: list[tuple[int, ...]] = []
    result = _run(verifier, clock, on_tokens=streamed.append)
    assert result.output_token_ids == OUTPUT
    assert streamed == [(6, 7, 8), (9, 10, 11), (12,)]
    calls = verifier.calls
    assert [c.prefix_len for c in calls] == [1, 4, 7]
    assert [c.draft_token_ids for c in calls] == [(6, 7, 15, 9), (9, 10, 18), ()]
    assert [c.draft_probs for c in calls] == [None, None, None]  # greedy sends no q
    assert [c.draft_s for c in calls] == [0.25, 0.25, 0.0]
    assert [c.network_s for c in calls] == [0.0, 0.625, 0.625]  # the last round's
    assert result.rounds == RECORDS
    assert result.request == RequestRecord(
        request_id="s",
        client_id="edge-0",
        slo_class="gold",
        server_id=0,
        arrival_s=0.0,
        first_token_s=1.25,
        finish_s=3.5,
        num_prompt_tokens=1,
        num_output_tokens=7,
        num_rounds=3,
        num_drafted=7,
        num_accepted=4,
        draft_s=0.5,
        network_s=1.875,
        queue_s=0.375,
        verify_s=0.75,
    )
    assert result.num_reconnects == 0
    assert verifier.closed == ["s"]
    assert [(s.return_hidden, s.slo_class) for s in verifier.specs] == [(False, "gold")]


def test_the_window_policy_sees_each_verdict() -> None:
    clock = Clock()
    policy = Recording()
    _run(Verifier(clock), clock, window=policy)

    def seen(acceptance: float, tpot: float) -> WindowObservation:
        return WindowObservation(4, acceptance, 2, 2, 0.625, tpot, False, pair="edge-0")

    first = WindowObservation(previous_gamma=0, recent_acceptance=None, pair="edge-0")
    # tpot: the first token came at 1.25; 3 then 6 committed at 1.25 then 2.5
    assert policy.seen == [first, seen(0.5, 0.0), seen(4 / 7, 0.25)]


def test_a_stop_predictor_needs_a_stopping_drafter_before_any_session() -> None:
    clock = Clock()
    verifier = Verifier(clock)
    with pytest.raises(ValueError, match="^Drafter cannot draft with a stop predictor"):
        _run(verifier, clock, stop=_NeverStop())
    assert verifier.specs == []


class _NeverStop:
    def keep_mask(self, features: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
        return np.ones(features.shape[0], dtype=bool)


def test_an_empty_block_counts_no_passes_only_with_a_stop_predictor() -> None:
    clock = Clock()
    verifier = Verifier(clock)
    verifier.open(SPEC)
    rng = np.random.default_rng(0)
    drafter = Drafter(clock)
    plain = play_round(verifier, drafter, "s", PROMPT, 0, GREEDY, rng, 0.0, clock)
    assert plain.num_passes is None
    assert plain.call.draft_token_ids == ()
    stop = _NeverStop()
    stopped = play_round(verifier, drafter, "s", (5, 6), 0, GREEDY, rng, 0.0, clock, stop)
    assert stopped.num_passes == 0
    assert clock.t == 2.0  # two verifications, no drafting


@pytest.mark.parametrize("wants", [True, False])
def test_a_feature_draft_observes_the_hidden_rows_timed_as_drafting(wants: bool) -> None:
    clock = Clock()
    verifier = Verifier(clock)
    drafter = FeatureDrafter(clock, wants_hidden=wants)
    result = _run(verifier, clock, drafter=drafter)
    assert result.output_token_ids == OUTPUT
    assert [s.return_hidden for s in verifier.specs] == [wants]
    if not wants:
        assert drafter.observed == []
        assert result.rounds == RECORDS
        return
    assert drafter.observed == [(1, 3), (4, 3), (7, 1)]  # (start, rows) per verification
    assert [r.draft_s for r in result.rounds] == [0.75, 0.75, 0.5]
    assert [r.start_s for r in result.rounds] == [0.0, 1.75, 3.5]


def test_the_draft_stream_is_neither_the_verifiers_nor_another_runs() -> None:
    verifier_rng = np.random.default_rng(7)  # the engine's: the session seed itself
    assert draft_rng(7).random() != verifier_rng.random()
    assert draft_rng(7, 0).random() != draft_rng(7, 1).random()  # one per fused run
    assert draft_rng(7, 1).random() == draft_rng(7, 1).random()


def test_short_blocks_count_what_was_sent_and_network_time_is_never_negative() -> None:
    clock = Clock()
    verifier = Verifier(clock)
    verifier.queue_s = 2.0  # more than the 1.0 s the round took: clock skew
    drafter = Drafter(clock)
    drafter.max_block = 1  # fewer tokens than γ
    result = _run(verifier, clock, drafter=drafter)
    assert result.output_token_ids == OUTPUT
    assert drafter.gammas == [4, 4, 2]
    assert [r.num_drafted for r in result.rounds] == [1, 1, 1, 0]
    assert [(r.uplink_s, r.downlink_s) for r in result.rounds] == [(0.0, 0.0)] * 4
