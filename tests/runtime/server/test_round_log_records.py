"""RoundLog by hand: one server record's every field from a queue entry and its outcome
(a block cut at the token budget commits fewer than L + 1 tokens), and a batch on disk
before the log is closed."""

from __future__ import annotations

from pathlib import Path

from edgespec.core.types import PendingVerification, RoundRecord, VerifyResult
from edgespec.runtime.messages import VerifyOutcome
from edgespec.runtime.server.round_log import RoundLog, read_round_log


def test_a_batch_is_on_disk_with_the_server_view_of_each_round(tmp_path: Path) -> None:
    pending = PendingVerification(3, "s", "c", 10.0, 4, 5, 20, "gold", 12.5, 2.0)
    # 3 of 4 accepted, but the budget left room for 2 tokens only
    outcome = VerifyOutcome(VerifyResult(4, 3, 3, 9, (5, 6, 7)), (5, 6), True, 5)
    log = RoundLog(tmp_path / "rounds.jsonl")
    log.batch([(pending, outcome)], start_s=10.25, end_s=11.0, batch_size=2)
    # flushed: readable while the server still runs
    assert list(read_round_log(tmp_path / "rounds.jsonl")) == [
        RoundRecord(
            request_id="s",
            round_index=0,
            start_s=10.0,
            end_s=11.0,
            draft_s=0.0,
            uplink_s=0.0,
            queue_s=0.25,
            verify_s=0.75,
            downlink_s=0.0,
            num_drafted=4,
            num_accepted=3,
            num_committed=2,
            batch_size=2,
            deadline_s=12.5,
        )
    ]
    log.close()
