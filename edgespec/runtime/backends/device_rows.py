"""Logit rows left on the device that computed them (:class:`DeviceRows`).

A batched pass computes every item's rows on the model's device. A greedy verdict needs
only each row's argmax: :func:`device_rows` takes the argmax of the whole batch on the
device and brings back those ``batch × rows`` integers in one copy; the rows themselves
(``rows × V`` floats, about 1 MiB per row for a 262k vocabulary) are copied to the host
only when a verdict asks for them (:meth:`DeviceRows.host`: sampling, a test).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import torch


class DeviceRows:
    """:class:`~edgespec.runtime.backends.base.LogitRows` on a torch device: one item's
    rows of a batch (a view: the batch's rows live while it does; :meth:`own` copies them
    out), their argmax already on the host, their values copied to the host on first ask."""

    __slots__ = ("_argmax", "_host", "_rows")

    def __init__(self, rows: torch.Tensor, argmax: tuple[int, ...]) -> None:
        if rows.dim() != 2 or rows.shape[0] != len(argmax):
            raise ValueError(f"{len(argmax)} argmax ids for rows of shape {tuple(rows.shape)}")
        self._rows = rows
        self._argmax = argmax
        self._host: npt.NDArray[np.float32] | None = None

    @property
    def num_rows(self) -> int:
        return len(self._argmax)

    def argmax(self) -> tuple[int, ...]:
        return self._argmax

    def host(self) -> npt.NDArray[np.float32]:
        if self._host is None:  # a copy of its own, not a view into the batch's rows
            self._host = np.array(self._rows.float().cpu().numpy(), dtype=np.float32)
        return self._host

    def own(self) -> DeviceRows:
        own = DeviceRows(self._rows.clone(), self._argmax)
        own._host = self._host
        return own


def device_rows(logits: torch.Tensor, num_rows: Sequence[int]) -> list[DeviceRows]:
    """Item ``i``'s :class:`DeviceRows`: the last ``num_rows[i]`` of row ``i`` of the
    batch's ``logits`` (batch × keep × V, on the device). One argmax over the batch and
    one device-to-host copy of its ``batch × keep`` ids."""
    keep = logits.shape[1]
    ids = logits.argmax(dim=-1).cpu().tolist()
    return [
        DeviceRows(logits[row, keep - n :], tuple(ids[row][keep - n :]))
        for row, n in enumerate(num_rows)
    ]
