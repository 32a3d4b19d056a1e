"""What a run leaves unfinished: the requests its devices still hold at the end, those of
them with an SLO target and those already sure to miss it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from edgespec.core.types import Request, UnfinishedCount, already_missed
from edgespec.sim.model.entities import DeviceState


def unfinished_count(
    devices: Sequence[DeviceState], slo_targets: Mapping[str, float | None], end_s: float
) -> UnfinishedCount:
    """The requests ``devices`` hold at ``end_s``, the end of a run: each one's running
    request (its session) and those waiting for it; those whose class has a target in
    ``slo_targets`` (tokens/s by class) and those already sure to miss it."""
    held: list[Request] = []
    for device in devices:
        if device.session is not None:
            held.append(device.session.request)
        held.extend(request for request, _ in device.pending)
    targets = [(r, slo_targets.get(r.slo_class)) for r in held]
    with_target = [(r, t) for r, t in targets if t is not None]
    missed = sum(already_missed(r, t, end_s) for r, t in with_target)
    return UnfinishedCount(len(held), len(with_target), missed)
