"""The server's own round records (``edgespec serve --round-log FILE``).

A drafter records its rounds on its own clock (``edgespec draft --records``); the server
sees what no single drafter does: every verified entry's deadline, when it was queued,
and which batch verified it, all on one clock. :class:`RoundLog` writes one
:class:`~edgespec.core.types.RoundRecord` per verified entry, as the drafter's records
are written (a JSONL line ``{"type": "RoundRecord", ...}``), with the server's view of
the round: ``start_s`` = when the verification was queued, ``queue_s`` = until its batch
started, ``verify_s`` = the batch's forward, ``end_s`` = the batch's end (so
``server_done_s`` is the batch's end), ``deadline_s`` = the deadline the batching
policy saw; the device's draft and network times are 0 (not the server's to know).
WISP's Eq. 21 attribution (:func:`edgespec.metrics.attribution.attribute_violations`)
then runs on the file as on the simulator's rounds (:func:`read_round_log`). A write that
fails (a full disk, an I/O error) ends the log, said once (``warn``), and the server goes
on: it stopped verifying, the scheduler's task dead, while Health still said serving. A
session's round count is forgotten as it closes or expires (one entry per session ever
logged was kept).

A session verified by a lossy rule labels every one of its rows (:data:`LABEL_KEYS`, e.g.
``"verification": "semantic", "lossy": true, "threshold": 12``); exact sessions' rows are
unchanged, and :func:`read_round_log` drops the labels.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

from edgespec.core.types import PendingVerification, RequestRecord, RoundRecord
from edgespec.runtime.messages import VerifyOutcome

LABEL_KEYS = frozenset(
    {"verification", "lossy", "threshold", "upload", "exchanges", "accepted_mismatches"}
)
"""Keys a lossy session's rows carry beyond the record's fields (the server's round log:
``verification``, ``lossy``, ``threshold``; ``edgespec draft --records`` adds ``upload``,
and per round ``exchanges`` and ``accepted_mismatches``)."""


def record_row(
    record: RoundRecord | RequestRecord, labels: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A record as a JSONL row: ``{"type": "RoundRecord", ...fields}`` (the server's round
    log and ``edgespec draft --records`` both write these), then ``labels`` (a lossy
    session's, :data:`LABEL_KEYS`)."""
    return {"type": type(record).__name__, **dataclasses.asdict(record), **(labels or {})}


def server_round(
    pending: PendingVerification,
    outcome: VerifyOutcome,
    round_index: int,
    start_s: float,
    end_s: float,
    batch_size: int,
    parts_s: float = 0.0,
) -> RoundRecord:
    """The server's record of one verified entry, its batch run from ``start_s`` to
    ``end_s``; ``parts_s``: the passes of its earlier prefill parts, verification time, not
    queueing."""
    return RoundRecord(
        request_id=pending.session_id,
        round_index=round_index,
        start_s=pending.enqueued_s,
        end_s=end_s,
        draft_s=0.0,
        uplink_s=0.0,
        queue_s=start_s - pending.enqueued_s - parts_s,
        verify_s=end_s - start_s + parts_s,
        downlink_s=0.0,
        num_drafted=outcome.result.num_drafted,
        num_accepted=outcome.result.num_accepted,
        num_committed=len(outcome.committed_token_ids),
        batch_size=batch_size,
        deadline_s=pending.deadline_s,
    )


class RoundLog:
    """Appends the server's round records to a JSONL file, a batch at a time (flushed
    after each batch, so a killed server leaves every finished batch on disk)."""

    def __init__(self, path: Path, warn: Callable[[str], None] | None = None) -> None:
        self.path = path
        self._file: TextIO = path.open("w", encoding="utf-8")
        self._rounds: dict[str, int] = {}  # verified rounds so far, per open session
        self._warn = warn
        self.failure: str | None = None  # why the log ended (a write failed), if it did

    def forget(self, session_id: str) -> None:
        """``session_id`` closed or expired: its round count goes (one opened again under
        its id starts at round 0)."""
        self._rounds.pop(session_id, None)

    def batch(
        self,
        verified: list[tuple[PendingVerification, VerifyOutcome]],
        start_s: float,
        end_s: float,
        batch_size: int,
        labels: Mapping[str, Mapping[str, Any]] | None = None,
        parts_s: Mapping[str, float] | None = None,
    ) -> None:
        """Record the entries of one batch that were verified (not those that failed);
        ``labels``: per session id, what its rows carry (a lossy session's labels);
        ``parts_s``: per session id, the passes of its earlier prefill parts."""
        if self.failure is not None:
            return
        try:
            for pending, outcome in verified:
                index = self._rounds.get(pending.session_id, 0)
                self._rounds[pending.session_id] = index + 1
                earlier_s = 0.0 if parts_s is None else parts_s.get(pending.session_id, 0.0)
                record = server_round(
                    pending, outcome, index, start_s, end_s, batch_size, earlier_s
                )
                extra = None if labels is None else labels.get(pending.session_id)
                self._file.write(json.dumps(record_row(record, extra)) + "\n")
            self._file.flush()
        except OSError as exc:  # the server goes on; the log ends here, said once
            self.failure = f"{self.path}: {exc.strerror or exc}"
            if self._warn is not None:
                self._warn(f"--round-log {self.failure}: no more rounds are logged; the "
                           "server goes on serving")  # fmt: skip

    def close(self) -> None:
        with contextlib.suppress(OSError):  # its last flush failing, as a write did
            self._file.close()


def read_round_log(path: Path) -> Iterator[RoundRecord]:
    """The round records of a JSONL file that :class:`RoundLog` (or ``edgespec draft
    --records``) wrote; other record types are skipped."""
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if row.pop("type", None) != "RoundRecord":
                continue
            for key in LABEL_KEYS:
                row.pop(key, None)
            try:
                yield RoundRecord(**row)
            except TypeError as exc:
                raise ValueError(f"{path}:{number}: not a RoundRecord: {exc}") from None
