"""What a run leaves unfinished: the requests its devices still hold at the end, those of
them with an SLO target and those already sure to miss it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from edgespec.core.types import Request
from edgespec.core.unfinished import UnfinishedClass, UnfinishedCount, already_missed
from edgespec.sim.model.entities import DeviceState


def unfinished_count(
    devices: Sequence[DeviceState], slo_targets: Mapping[str, float | None], end_s: float
) -> UnfinishedCount:
    """The requests ``devices`` hold at ``end_s``, the end of a run: each one's running
    request (its session) and those waiting for it; those whose class has a target in
    ``slo_targets`` (tokens/s by class) and those already sure to miss it, by class, every
    class with a target there (0 of 0 where it holds none)."""
    held: list[Request] = []
    for device in devices:
        if device.session is not None:
            held.append(device.session.request)
        held.extend(request for request, _ in device.pending)
    targets: dict[str, float] = {}
    with_target: Counter[str] = Counter()
    missed: Counter[str] = Counter()
    for request in held:
        target = slo_targets.get(request.slo_class)
        if target is not None:
            targets[request.slo_class] = target
            with_target[request.slo_class] += 1
            missed[request.slo_class] += already_missed(request, target, end_s)
    for name, target in slo_targets.items():  # every class with a target, none held too:
        if target is not None:  # a class none of whose requests arrived keeps its place
            targets.setdefault(name, target)  # in the metrics (it vanished from them)
    classes = tuple(
        UnfinishedClass(name, targets[name], with_target[name], missed[name])
        for name in sorted(targets)
    )
    return UnfinishedCount(len(held), classes)
