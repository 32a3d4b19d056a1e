"""The server's round log (``edgespec serve --round-log``): one record per verified entry,
on the server's clock, exact; read back and attributed with WISP's Eq. 21."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.config import from_dict
from edgespec.core.types import RoundRecord, SamplingParams
from edgespec.metrics.attribution import attribute_violations
from edgespec.policies.batching import FcfsBatching
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyOutcome
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.prefill_parts import PrefillPart
from edgespec.runtime.server.round_log import RoundLog, read_round_log
from edgespec.runtime.server.service import VerificationService
from edgespec.runtime.wire.inprocess import target_greedy_decode

PROMPT = (3, 1, 4, 1, 5, 9, 2, 6)


class _TimedEngine(VerificationEngine):
    """Each batch's forward takes ``durations_s[i]`` on the injected clock."""

    def __init__(self, target: TransformersTarget, now: list[float], durations_s: list[float]):
        super().__init__(target)
        self._now = now
        self._durations_s = durations_s

    def verify_batch(
        self, calls: Sequence[VerifyCall], serials: Sequence[int] | None = None
    ) -> list[VerifyOutcome | RequestError | PrefillPart]:
        self._now[0] += self._durations_s.pop(0)
        return super().verify_batch(calls, serials)


def _serve_three_rounds(target: TransformersTarget, path: Path) -> tuple[int, ...]:
    """gold (16 tok/s, pace rule) and best-effort sessions open at 10 s; gold's round 1
    (4 tokens) is queued at 10.5 s, b's at 10.5 s; gold's round 2 at 11 s. Batches take
    0.25 s and then 2 s."""
    config = from_dict(ServerConfig, {"slo_classes": {"gold": 16.0, "be": None}})
    ref = target_greedy_decode(target, PROMPT, 8)
    now = [10.0]
    log = RoundLog(path)

    async def scenario() -> None:
        engine = _TimedEngine(target, now, [0.25, 2.0])
        service = VerificationService(
            engine, config, FcfsBatching(), clock=lambda: now[0], round_log=log
        )
        sampling = SamplingParams(max_new_tokens=8)
        service.open_session(SessionSpec("g", "x", PROMPT, sampling, "gold"))
        service.open_session(SessionSpec("b", "x", PROMPT, sampling, "be"))
        now[0] = 10.5
        gold = service.verify(VerifyCall("g", len(PROMPT), ref[:4]))
        best = service.verify(VerifyCall("b", len(PROMPT), (ref[0],)))
        await service.start()
        await asyncio.gather(gold, best)
        now[0] = 11.0
        await service.verify(VerifyCall("g", len(PROMPT) + 5, ref[5:7]))
        await service.stop()

    asyncio.run(scenario())
    log.close()
    return ref


def _server_record(
    request_id: str,
    index: int,
    queued_s: float,
    end_s: float,
    verify_s: float,
    tokens: tuple[int, int, int],
    batch_size: int,
    deadline_s: float | None,
) -> RoundRecord:
    """A record as the server writes it: no device times; queued until ``end_s - verify_s``;
    ``tokens`` = (drafted, accepted, committed)."""
    drafted, accepted, committed = tokens
    return RoundRecord(
        request_id, index, queued_s, end_s, draft_s=0.0, uplink_s=0.0,
        queue_s=end_s - verify_s - queued_s, verify_s=verify_s, downlink_s=0.0,
        num_drafted=drafted, num_accepted=accepted, num_committed=committed,
        batch_size=batch_size, server_id=0, deadline_s=deadline_s,
    )  # fmt: skip


def test_each_verified_entry_is_one_exact_record(
    target: TransformersTarget, tmp_path: Path
) -> None:
    path = tmp_path / "rounds.jsonl"
    _serve_three_rounds(target, path)
    g1, b1, g2 = list(read_round_log(path))
    assert g1 == _server_record("g", 0, 10.5, 10.75, 0.25, (4, 4, 5), 2, 10.0 + 1 / 16)
    assert b1 == _server_record("b", 0, 10.5, 10.75, 0.25, (1, 1, 2), 2, None)
    assert g2 == _server_record("g", 1, 11.0, 13.0, 2.0, (2, 2, 3), 1, 10.0 + 6 / 16)
    assert [g1.server_done_s, g2.server_done_s] == [10.75, 13.0]
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [row["type"] for row in rows] == ["RoundRecord"] * 3


def test_the_log_attributes_a_slow_batch_to_compute(
    target: TransformersTarget, tmp_path: Path
) -> None:
    path = tmp_path / "rounds.jsonl"
    _serve_three_rounds(target, path)
    attribution = attribute_violations(read_round_log(path), window=2)
    # both gold rounds miss (10.75 > 10.0625, 13.0 > 10.375); the 2 s batch is 2 / 1.125
    # of the mean of the last two batches, above 1.5
    assert [(v.round_index, v.compute_dominant) for v in attribution.violated] == [
        (0, False),
        (1, True),
    ]
    assert attribution.violated[1].rho == pytest.approx(2.0 / 1.125, abs=1e-12)
    assert attribution.num_rounds_with_deadline == 2


def test_reading_skips_other_records_and_names_a_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    record = {"type": "RoundRecord", "request_id": "r", "round_index": 0, "start_s": 0.0}
    path.write_text(json.dumps({"type": "RequestRecord", "x": 1}) + "\n\n" + json.dumps(record))
    with pytest.raises(ValueError, match=f"^{path}:3: not a RoundRecord: "):
        list(read_round_log(path))


def test_an_unwritable_round_log_fails_before_the_model_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "missing-dir" / "rounds.jsonl"
    assert main(["serve", "--target", "never-loaded", "--round-log", str(bad)]) == 2
    message = f"edgespec serve: --round-log {bad}: No such file or directory"
    assert capsys.readouterr().err.strip() == message


def test_a_round_log_that_cannot_be_written_ends_and_the_server_goes_on(
    target: TransformersTarget,
) -> None:
    """A write that fails (a full disk: /dev/full) ended the scheduler's task: the batch's
    callers never got a reply, nothing was verified again, and Health still said serving.
    Now the log ends, said once, and every call is answered."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    said: list[str] = []
    log = RoundLog(Path("/dev/full"), said.append)

    async def scenario() -> list[int]:
        engine = VerificationEngine(target)
        service = VerificationService(engine, from_dict(ServerConfig, {}), FcfsBatching(),
                                      round_log=log)  # fmt: skip
        await service.start()
        sampling = SamplingParams(max_new_tokens=8)
        committed = []
        for sid in ("a", "b"):
            service.open_session(SessionSpec(sid, "x", PROMPT, sampling))
            reply = await asyncio.wait_for(service.verify(VerifyCall(sid, len(PROMPT), ())), 30)
            committed.append(len(reply.outcome.committed_token_ids))
        await service.stop()
        return committed

    assert asyncio.run(scenario()) == [1, 1]
    log.close()
    assert said == [
        "--round-log /dev/full: No space left on device: no more rounds are logged; the server "
        "goes on serving"
    ]


def test_a_closed_sessions_round_count_is_forgotten(
    target: TransformersTarget, tmp_path: Path
) -> None:
    """One entry per session ever logged was kept (a uuid a request: it grew for good), and
    a session opened again under a closed one's id logged its first round as the old one's
    next."""
    log = RoundLog(tmp_path / "r.jsonl")

    async def scenario() -> None:
        engine = VerificationEngine(target)
        service = VerificationService(engine, from_dict(ServerConfig, {}), FcfsBatching(),
                                      round_log=log)  # fmt: skip
        await service.start()
        for _ in range(2):
            service.open_session(SessionSpec("s", "x", PROMPT, SamplingParams(max_new_tokens=8)))
            await service.verify(VerifyCall("s", len(PROMPT), ()))
            assert service.close_session("s")
        await service.stop()

    asyncio.run(scenario())
    log.close()
    assert [r.round_index for r in read_round_log(tmp_path / "r.jsonl")] == [0, 0]
    assert log._rounds == {}
