"""One item's logit rows as a pass returns them (:class:`LogitRows`), rows already on
the host (:class:`HostRows`) and what a greedy verdict keeps of them across calls
(:class:`ArgmaxRows`); rows left on a torch device are
:class:`~edgespec.runtime.backends.device_rows.DeviceRows`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt


class LogitRows(Protocol):
    """One item's logit rows (``num_logits`` × V), kept where the backend computed them.

    A verdict takes from them only what it needs: a greedy verdict the argmax of each row
    (a few integers, even when the rows sit on a GPU), a sampled one the rows themselves
    (copied to the host once, as float32)."""

    @property
    def num_rows(self) -> int: ...

    def argmax(self) -> tuple[int, ...]:
        """Each row's argmax (the first index of its maximum)."""
        ...

    def host(self) -> npt.NDArray[np.float32]:
        """The rows on the host, float32 (the same array on every call)."""
        ...

    def own(self) -> LogitRows:
        """These rows holding no reference to the rest of their batch (what a pass kept
        across calls holds: a view would keep the whole batch's rows alive)."""
        ...


@dataclass(frozen=True, slots=True, eq=False)
class HostRows:
    """:class:`LogitRows` already on the host (a backend computing on the CPU, a test)."""

    rows: npt.NDArray[np.float32]

    def __post_init__(self) -> None:
        if self.rows.ndim != 2:
            raise ValueError(f"logit rows must be 2-D (rows × vocabulary), got {self.rows.shape}")

    @property
    def num_rows(self) -> int:
        return int(self.rows.shape[0])

    def argmax(self) -> tuple[int, ...]:
        return tuple(int(t) for t in np.argmax(self.rows, axis=-1))

    def host(self) -> npt.NDArray[np.float32]:
        return self.rows

    def own(self) -> HostRows:
        return HostRows(self.rows.copy()) if self.rows.base is not None else self


@dataclass(frozen=True, slots=True, eq=False)
class ArgmaxRows:
    """Only each row's argmax, of rows a greedy verdict keeps across calls (at a 262k
    vocabulary one float32 row is 1 MB; its argmax, one integer): :meth:`host` refuses."""

    indices: tuple[int, ...]

    @property
    def num_rows(self) -> int:
        return len(self.indices)

    def argmax(self) -> tuple[int, ...]:
        return self.indices

    def host(self) -> npt.NDArray[np.float32]:
        raise TypeError("only the rows' argmax was kept (ArgmaxRows)")

    def own(self) -> ArgmaxRows:
        return self
