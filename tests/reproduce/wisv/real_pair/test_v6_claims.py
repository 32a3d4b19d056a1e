"""V6's claim rows on hand-made results (no models): a latency gap that shrinks with the
window misses (a saturated one says why), an upload other than FH misses, and the answers'
agreement on the link is judged."""

from __future__ import annotations

from edgespec.reproduce.claims import Cause, Outcome
from edgespec.reproduce.wisv.real_pair.claims import v6_reductions, v6_rows
from tests.reproduce.wisv.real_pair.test_claims import SHIPPED_HEAD, _by_what, results, v6_cell


def test_v6_a_gap_that_shrinks_misses_and_a_saturated_one_says_why() -> None:
    cells = []
    for window, greedy, wisv in ((4, 5.0, 4.0), (8, 6.0, 5.5), (16, 8.0, 7.9)):
        cells += [v6_cell(172.0, window, "greedy", greedy),
                  v6_cell(172.0, window, "wisv", wisv)]  # fmt: skip
    rows = v6_rows(results(v6=cells))
    below, gap = rows[0], rows[1]
    assert below.outcome is Outcome.HOLDS
    assert gap.outcome is Outcome.MISS and gap.cause is Cause.MODELLING  # never unknown
    assert gap.why.endswith(
        "hidden states): γ4 400 vs 500 ms a round, 3.00 vs 3.00 tokens; γ8 550 vs 600 ms a "
        "round, 3.00 vs 3.00 tokens; γ16 790 vs 800 ms a round, 3.00 vs 3.00 tokens"
    )
    assert [round(r, 4) for _, r in v6_reductions(results(v6=cells), 172.0, "latency_s")] == [
        0.2,
        0.0833,
        0.0125,
    ]
    saturated = []
    for window, wisv in ((4, 0.8), (8, 0.9), (16, 0.85)):
        saturated += [v6_cell(172.0, window, "greedy", 5.0),
                      v6_cell(172.0, window, "wisv", wisv, rounds=1.2)]  # fmt: skip
    gap = v6_rows(results(v6=saturated))[1]
    assert gap.outcome is Outcome.MISS and gap.cause is Cause.MODELLING
    assert "end in 1.2 rounds" in gap.why


def test_v6_upload_other_than_fh_misses_and_agreement_is_judged() -> None:
    cells = []
    for window in (4, 8):
        wisv = v6_cell(498.0, window, "wisv", 4.0, agreement=0.5, upload=("fh", "sh"))
        cells += [v6_cell(498.0, window, "greedy", 5.0), wisv]
    rows = v6_rows(results(v6=cells, head=SHIPPED_HEAD))
    upload = _by_what(rows, "adaptive upload")[0]
    assert upload.outcome is Outcome.MISS and upload.ours == "uploads used: FH, SH"
    answers = _by_what(rows, "answers on the link")[0]
    assert answers.outcome is Outcome.MISS and answers.cause is Cause.MODELLING
    assert answers.ours == "50% agree (greedy SD: 100%)"
