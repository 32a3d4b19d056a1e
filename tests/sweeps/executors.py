"""For the sweep executors' tests: an executor whose results come back out of order, as a
process pool's may, and a stand-in for Ray (:class:`FakeRay`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any


class ReversedExecutor:
    """Runs every item in this process and reports the results last item first."""

    def map_unordered(
        self, fn: Callable[[Any], Any], items: Sequence[Any]
    ) -> Iterator[tuple[int, Any]]:
        results = [(i, fn(item)) for i, item in enumerate(items)]
        yield from reversed(results)


class FakeRay:
    """Just enough of Ray for the executor: tasks run at ``remote`` time."""

    def __init__(self) -> None:
        self.inits: list[dict[str, Any]] = []

    def is_initialized(self) -> bool:
        return False

    def init(self, **options: Any) -> None:
        self.inits.append(options)

    def shutdown(self) -> None:
        return None

    def remote(self, **options: Any) -> Callable[[Any], Any]:
        class Task:
            def __init__(self, fn: Callable[..., Any]) -> None:
                self.fn = fn

            def remote(self, *args: Any) -> Any:
                return (self.fn(*args),)

        return Task

    def put(self, value: Any) -> Any:
        return value

    def wait(self, refs: list[Any], num_returns: int) -> tuple[list[Any], list[Any]]:
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref: Any) -> Any:
        return ref[0]
