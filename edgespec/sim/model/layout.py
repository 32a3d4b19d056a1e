"""Where a run's devices and servers sit (:class:`Layout`): built by
:func:`edgespec.sim.setup.cells.select_cells`, read by the router and the arrivals."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Layout:
    """Where a run's devices and servers sit: *slots* are the cells this run simulates.

    ``cell_ids[slot]``: the cell's number in the scenario (``None``: an unpinned scenario,
    one slot, the scenario-wide streams). ``device_slot``/``server_slot``: the slot of each
    device/server by its id in this run; ``device_global``/``server_global``: its id in the
    whole scenario (equal to the run's id unless the run is a shard).
    """

    cell_ids: tuple[int | None, ...]
    device_slot: tuple[int, ...]
    server_slot: tuple[int, ...]
    device_global: tuple[int, ...]
    server_global: tuple[int, ...]

    @classmethod
    def whole(cls, num_devices: int, num_servers: int) -> Layout:
        """The layout of an unpinned scenario: one slot, the scenario-wide streams."""
        return cls(
            (None,),
            (0,) * num_devices,
            (0,) * num_servers,
            tuple(range(num_devices)),
            tuple(range(num_servers)),
        )

    @property
    def is_shard(self) -> bool:
        """Whether ids in this run differ from the whole scenario's."""
        return any(i != g for i, g in enumerate(self.server_global)) or any(
            i != g for i, g in enumerate(self.device_global)
        )
