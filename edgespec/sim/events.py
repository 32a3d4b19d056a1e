"""The simulator's event kinds, in tie-break order: at equal times a lower kind runs
first (:mod:`edgespec.sim.kernel` orders ties by kind, then entity).

``WAKE`` events of the inbound handler sets (:mod:`edgespec.sim.fast.inbound`) take
``ARRIVE``'s slot: they stand for the ARRIVE that would have found an idle server.
"""

from __future__ import annotations

BATCH_END, DELIVER, DRAFT_DONE, ARRIVE, REQUEST, DISPATCH, FUSED_ALONE_END = range(7)
"""``FUSED_ALONE_END``: an unqueued fused round's verdict (``dsdsim_compat``'s
``unqueued_fused``; the reference handler set only)."""
