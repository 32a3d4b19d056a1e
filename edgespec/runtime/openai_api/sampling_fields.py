"""A request's sampling fields, checked into :class:`SamplingFields`: ``temperature`` and
the cuts after it, ``top_k``, ``top_p`` and ``min_p`` (:mod:`edgespec.core.sampling_cuts`,
made in that order); a bad one is a 400 naming it (``param``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from edgespec.core.sampling_cuts import cuts_on
from edgespec.core.wire_limits import UINT32_LIMIT, wire_float_problem
from edgespec.runtime.openai_api.errors import invalid, shown


@dataclass(frozen=True, slots=True)
class SamplingFields:
    """How one request samples: greedy at ``temperature`` 0, the cuts then all off."""

    temperature: float
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0


def number_field(
    body: Mapping[str, Any], name: str, default: float, low: float, high: float
) -> float:
    """Field ``name`` of ``body``, a finite JSON number in [``low``, ``high``] (``default``
    when absent or null)."""
    value = body.get(name)
    if value is None:
        return default
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (isinstance(value, float) and not math.isfinite(value))
    ):
        raise invalid(f"{name} must be a number, got {shown(value)}", param=name)
    if not low <= value <= high:  # an int of any size compares exactly, unconverted
        raise invalid(f"{name} must be in [{low}, {high}], got {shown(value)}", param=name)
    return float(value)


def integer_field(body: Mapping[str, Any], name: str, default: int | None) -> int | None:
    """Field ``name`` of ``body``, a JSON integer (``default`` when absent or null)."""
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(f"{name} must be an integer, got {shown(value)}", param=name)
    return value


def _top_k(body: Mapping[str, Any]) -> int:
    """``top_k`` as vLLM takes it: -1 or 0 (every token) or a count of tokens."""
    top_k = integer_field(body, "top_k", 0)
    assert top_k is not None
    if not -1 <= top_k < UINT32_LIMIT:
        raise invalid(f"top_k must be -1 or 0 (every token) or a count of tokens below 2**32, "
                      f"got {shown(top_k)}", param="top_k")  # fmt: skip
    return max(top_k, 0)


def parse_sampling(body: Mapping[str, Any], default_temperature: float) -> SamplingFields:
    """``temperature`` (default ``default_temperature``: the config's, not OpenAI's 1),
    ``top_k``, ``top_p`` in [0, 1] as OpenAI takes it, ``min_p`` in [0, 1]. A ``top_p`` of 0
    keeps only the most likely token: greedy, so temperature 0 and every cut off (each cut
    keeps the most likely token: greedy is what they all give then; the core's top_p is in
    (0, 1], and the wire reads a top_p of 0 as unset, i.e. 1). A cut that would change a
    row at temperature 0 (greedy; the default unless the config sets another) would change
    nothing: refused, ``unsupported_value`` as :mod:`.fields`' refusals."""
    temperature = number_field(body, "temperature", default_temperature, 0.0, 2.0)
    top_p = number_field(body, "top_p", 1.0, 0.0, 1.0)
    top_k = _top_k(body)
    min_p = number_field(body, "min_p", 0.0, 0.0, 1.0)
    for name, value in (("temperature", temperature), ("top_p", top_p), ("min_p", min_p)):
        if (problem := wire_float_problem(value)) is not None:
            raise invalid(f"{name} {problem}", param=name)
    if temperature == 0 and (given := cuts_on(top_p if top_p > 0 else 1.0, top_k, min_p)):
        name = given[0]
        default = "" if body.get("temperature") is not None else (
            ", this endpoint's default when a request gives none")  # fmt: skip
        raise invalid(f"{name} {shown(body[name])} does nothing at temperature 0 (greedy)"
                      f"{default}: give a temperature > 0 to sample with {name}",
                      param=name, code="unsupported_value")  # fmt: skip
    if top_p == 0:
        return SamplingFields(0.0)
    return SamplingFields(temperature, top_p, top_k, min_p)
