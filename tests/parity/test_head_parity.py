"""WISV's decision head decides alike in both hosts that run it: the real server's semantic
rule (:class:`~edgespec.runtime.server.semantic.SemanticRule`, bound to a session as the
server binds it, all of a round's mismatches at once) and the in-process WISV rollout
(:func:`~edgespec.learn.wisv.rollout.wisv_rollout` with its
:class:`~edgespec.learn.wisv.rollout.HeadRule`, one mismatch at a time). On the same head,
hidden rows, channel and threshold both give the head the same inputs (float64 rows, then
the CSI features in order), accept and reject the same mismatches and end the round at
the same position with the same tokens."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from hypothesis import given, settings
from hypothesis import strategies as st

from edgespec.core.types import SamplingParams
from edgespec.learn.wisv.rollout import HeadRule, wisv_rollout
from edgespec.policies.semantic.csi import ChannelState
from edgespec.policies.semantic.head import DecisionHead
from edgespec.runtime.backends.logit_rows import HostRows
from edgespec.runtime.messages import DRAFT_HIDDEN, SemanticSpec, SessionSpec, VerifyCall
from edgespec.runtime.server.semantic import SemanticVerification
from edgespec.runtime.server.verification import Verdict
from tests.policies.semantic.broken_heads import WrappedHead, seeded_head

K = 6  # drafted tokens per round
VOCAB = 32
PROMPT = (3, 1, 4)
GREEDY = SamplingParams(max_new_tokens=K + 1)
FloatArray = npt.NDArray[np.float64]
Call = tuple[FloatArray, FloatArray, tuple[float, ...], FloatArray]
Case = tuple[list[int], list[int], list[npt.NDArray[np.float32]]]


@dataclass(frozen=True, slots=True, eq=False)
class Recording(WrappedHead):
    """A real head that records what each host hands its ``inputs``."""

    calls: list[Call] = field(default_factory=list)

    def inputs(self, hd: FloatArray, ht: FloatArray, csi: tuple[float, ...]) -> FloatArray:
        x = self.head.inputs(hd, ht, csi)
        self.calls.append((hd, ht, csi, x))
        return x


class Replay:
    """A stepper giving, at output position j, ``tokens[j]`` and ``hidden[j]``."""

    def __init__(self, tokens: Sequence[int], hidden: npt.NDArray[np.float32]) -> None:
        self.tokens, self.hidden, self.j = tokens, hidden, 0

    def start(self, prompt_ids: Sequence[int]) -> tuple[int, npt.NDArray[np.float32]]:
        self.j = 0
        return self.tokens[0], self.hidden[0]

    def step(self, token: int) -> tuple[int, npt.NDArray[np.float32]]:
        self.j += 1
        return self.tokens[self.j], self.hidden[self.j]


class Never:
    def finished(self, output_ids: Sequence[int]) -> bool:
        return False


@dataclass(frozen=True)
class Round:
    """One round's decision: where it ended, what it committed, the accepted mismatches,
    and what the head was given."""

    stop: int
    committed: tuple[int, ...]
    accepted: tuple[int, ...]
    calls: tuple[Call, ...]


def _case(seed: int, mismatch: Sequence[bool]) -> Case:
    """The target's argmax, the draft's tokens (another token where ``mismatch``) and both
    models' float32 hidden rows (K + 1 positions)."""
    rng = np.random.default_rng(seed)
    argmax = [int(t) for t in rng.integers(0, VOCAB, size=K + 1)]
    draft = [(t + 1) % VOCAB if m else t for t, m in zip(argmax, [*mismatch, False], strict=True)]
    rows = [rng.normal(size=(K + 1, w)).astype(np.float32) for w in (8, 12)]
    return argmax, draft, rows


def _server(head: DecisionHead, case: Case, spec: SemanticSpec) -> Round:
    argmax, draft, (hd, ht) = case
    recording = Recording(head)
    session = SessionSpec("s", "c", PROMPT, GREEDY, verification_rule="semantic", semantic=spec)
    rule = SemanticVerification(recording).bind(session)
    logits = np.zeros((K + 1, VOCAB), dtype=np.float32)
    logits[np.arange(K + 1), argmax] = 1.0
    call = VerifyCall("s", len(PROMPT), tuple(draft[:K]), payloads={DRAFT_HIDDEN: hd[:K]})
    verdict = rule.verdict_hidden(call, GREEDY, HostRows(logits), ht)
    assert isinstance(verdict, Verdict)
    result = verdict.result
    committed = (*result.accepted_token_ids, result.extra_token)
    calls = tuple(recording.calls)
    return Round(result.num_accepted, committed, verdict.mismatch_positions, calls)


def _rollout(head: DecisionHead, case: Case, spec: SemanticSpec) -> Round:
    argmax, draft, (hd, ht) = case
    recording = Recording(head)
    channel = ChannelState(spec.uplink_bps, spec.per, spec.rtt_s)
    rule = HeadRule(recording, channel, spec.threshold)
    roll = wisv_rollout(
        Replay(argmax, ht), Replay(draft, hd), PROMPT, K, K + 1, frozenset(), Never(), rule
    )
    met = [m for m in roll.met if m.at.round == 0]
    stop = next((m.at.position for m in met if not m.accepted), K)
    accepted = tuple(m.at.position for m in met if m.accepted)
    return Round(stop, roll.output[: stop + 1], accepted, tuple(recording.calls[: len(met)]))


def _same(server: Round, rollout: Round) -> None:
    assert (server.stop, server.committed, server.accepted) == (
        rollout.stop,
        rollout.committed,
        rollout.accepted,
    )
    if not server.calls:  # T = 0 or no mismatch: the server decides without the head
        return
    ((hd, ht, csi, x),) = server.calls
    assert len(rollout.calls) == len(server.accepted) + (server.stop < K)
    for i, (r_hd, r_ht, r_csi, r_x) in enumerate(rollout.calls):
        assert hd.dtype == ht.dtype == r_hd.dtype == r_ht.dtype == np.float64
        assert r_csi == csi
        np.testing.assert_array_equal(r_x[0], x[i])


CHANNELS = st.builds(
    SemanticSpec,
    threshold=st.integers(0, 16),
    uplink_bps=st.floats(1.0, 1e10),
    per=st.floats(0.0, 0.9),
    rtt_s=st.floats(0.0, 2.0),
)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    mismatch=st.lists(st.booleans(), min_size=K, max_size=K),
    spec=CHANNELS,
)
def test_both_hosts_decide_alike(seed: int, mismatch: list[bool], spec: SemanticSpec) -> None:
    head, case = seeded_head(seed % 7), _case(seed, mismatch)
    _same(_server(head, case, spec), _rollout(head, case, spec))


def test_every_threshold_on_two_links_with_both_decisions() -> None:
    """A sweep that meets accepted and rejected mismatches alike (not a vacuous parity)."""
    head, case = seeded_head(0), _case(3, [True] * K)
    stops = set()
    for uplink_bps, per in ((20e6, 0.1), (500e6, 0.0)):
        for threshold in range(17):
            spec = SemanticSpec(threshold, uplink_bps, per, 0.05)
            server = _server(head, case, spec)
            _same(server, _rollout(head, case, spec))
            stops.add(server.stop)
    assert {0, 1, 2, K} <= stops
