"""Fast construction of frozen slotted dataclass instances, for per-round hot loops.

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` (its own
``__setattr__`` refuses), about four times the cost of plain slot stores. The hosts build
one :class:`~edgespec.core.types.PendingVerification` and one
:class:`~edgespec.policies.interfaces.WindowObservation` per verification round, so
:func:`frozen_builder` gives them a constructor that fills a private *twin* class (the
same ``__slots__``, no frozen ``__setattr__``) with plain stores, then makes the object
an instance of the frozen class by assigning ``__class__`` (allowed between classes with
the same slot layout). The result is an ordinary instance of the frozen class: same type,
same fields, equal to (and hashing like) one built by ``__init__``, and frozen from then
on. Only for classes without ``__post_init__`` (nothing to validate) and without
``__weakref__``/``__dict__``; every argument is positional and none is defaulted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def frozen_builder(cls: type[T]) -> Callable[..., T]:
    """``build(*fields)`` equal to ``cls(*fields)`` (all fields, in declaration order)."""
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    slots = getattr(cls, "__slots__", None)
    if tuple(names) != slots or hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} is not a slotted dataclass without __post_init__")
    args = ", ".join(names)
    stores = "".join(f"\n    self.{name} = {name}" for name in names)
    source = (
        f"class _Twin:\n    __slots__ = {tuple(names)!r}\n"
        f"def build({args}):\n    self = _new(_Twin){stores}\n"
        "    self.__class__ = _cls\n    return self\n"
    )
    namespace: dict[str, Any] = {"_cls": cls, "_new": object.__new__}
    exec(source, namespace)
    build: Callable[..., T] = namespace["build"]
    return build
