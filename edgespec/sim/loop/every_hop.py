"""The every-hop handler set: the reference round with each hop as an event of its own.

The reference draws a block's uplink as its round begins and begins a continuing session's
next round at its BATCH_END (nothing the round reads changes in between, and the device's
own random stream makes the same draws). This set schedules both hops instead: a
DRAFT_DONE when the draft is done (the uplink is drawn there) and a DELIVER when a
round's tokens reach the device (the next round begins there). It is slower and must give
identical records: the test of the reference's shortcut (tests/sim/test_handler_sets.py).
"""

from __future__ import annotations

from edgespec.policies.interfaces import WindowDecision
from edgespec.sim.events import DELIVER, DRAFT_DONE
from edgespec.sim.loop.server import ReferenceLoop
from edgespec.sim.model.entities import Session


class EveryHopLoop(ReferenceLoop):
    """:class:`ReferenceLoop` with DRAFT_DONE and DELIVER events for every round."""

    name = "every_hop"

    def send_block(self, s: Session, ready_s: float) -> None:
        self.q.push(ready_s, DRAFT_DONE, s.device.device_id, s)

    def resume_round(self, s: Session, t: float, decided: WindowDecision | None = None) -> None:
        s.resume = decided
        self.q.push(t, DELIVER, s.device.device_id, s)
