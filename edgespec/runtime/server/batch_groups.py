"""Grouped verify calls: the calls a client sends together for one of its batches carry
the same ``batch_id`` and their count ``batch_calls``
(:class:`~edgespec.runtime.messages.VerifyCall`). The scheduler keeps each such call in
its queue but out of the batching policy's view until ``batch_calls`` calls of the group
have come, or ``group_wait_s`` has passed since the first did; then all of them are shown
at once, so one forward pass can take them all (Zhu et al.'s drafting server prices one
verification pass per batch). A group is one client's (its ``client_id``, with auth on
its token: :meth:`~edgespec.runtime.server.clients.ClientBook.label`): another client's
calls never wait for it, nor join it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import VerifyCall

_Key = tuple[str, str]  # (client_id, batch_id)


@dataclass(slots=True)
class _Group:
    num_calls: int
    timer: asyncio.TimerHandle
    members: set[int] = field(default_factory=set)


class BatchGroups:
    """The held calls (by queue entry id) and their groups. ``on_release`` is called when
    a group's calls become visible (the scheduler's wake-up); timers run on the running
    event loop."""

    def __init__(self, wait_s: float, on_release: Callable[[], None]) -> None:
        self._wait_s = wait_s
        self._on_release = on_release
        self._groups: dict[_Key, _Group] = {}
        self._held: dict[int, _Key] = {}

    def is_held(self, entry_id: int) -> bool:
        """Whether queue entry ``entry_id`` waits for the rest of its group."""
        return entry_id in self._held

    def hold(self, entry_id: int, client_id: str, call: VerifyCall) -> None:
        """Hold queue entry ``entry_id`` (``call``, of ``client_id``) if it is grouped; the
        group's last call releases the group. ``INVALID_ARGUMENT`` (nothing held) when its
        ``batch_calls`` differs from its group's."""
        if call.batch_calls <= 1 or not call.batch_id:
            return
        key = (client_id, call.batch_id)
        group = self._groups.get(key)
        if group is None:
            timer = asyncio.get_running_loop().call_later(self._wait_s, self._release, key)
            group = self._groups[key] = _Group(call.batch_calls, timer)
        elif group.num_calls != call.batch_calls:
            raise RequestError(
                ErrorCode.INVALID_ARGUMENT,
                f"batch_calls {call.batch_calls} differs from the {group.num_calls} "
                f"of the held calls of batch_id {call.batch_id!r} (a batch's calls share both)",
            )
        group.members.add(entry_id)
        self._held[entry_id] = key
        if len(group.members) >= group.num_calls:
            self._release(key)

    def leave(self, entry_id: int) -> None:
        """Entry ``entry_id`` left the queue (its caller went away, its session closed):
        its group, if now empty, is dropped; the others stay held until their timer."""
        key = self._held.pop(entry_id, None)
        if key is None:
            return
        group = self._groups[key]
        group.members.discard(entry_id)
        if not group.members:
            group.timer.cancel()
            del self._groups[key]

    def clear(self) -> None:
        """Drop every group and its timer (the scheduler stops)."""
        for group in self._groups.values():
            group.timer.cancel()
        self._groups.clear()
        self._held.clear()

    def _release(self, key: _Key) -> None:
        group = self._groups.pop(key, None)
        if group is None:
            return
        group.timer.cancel()
        for entry_id in group.members:
            del self._held[entry_id]
        self._on_release()
