"""A ``VerifyRequest``'s named arrays (protobuf only, no grpc): ``payloads`` and the
float16 ``draft_hidden`` bytes as float32 arrays by name, each bounded while it is read."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import DRAFT_HIDDEN
from edgespec.runtime.validation import check_identifier

MAX_PAYLOAD_RANK = 8
"""A payload array's most dimensions (numpy's own limit is 64)."""
MAX_PAYLOAD_SIZE = 1 << 24
"""The most entries a payload's shape may describe, zero-sized dimensions left out (so an
empty array's shape stays one numpy can build); a 4 MiB message holds 2^20 float32."""


def payloads_from_proto(msg: Any) -> dict[str, npt.NDArray[np.float32]]:
    """``msg.payloads`` and ``msg.draft_hidden`` (as :data:`DRAFT_HIDDEN`) by name."""
    payloads: dict[str, npt.NDArray[np.float32]] = {}
    for item in msg.payloads:
        check_identifier("payload name", item.name)
        if not item.name or item.name in payloads:
            raise RequestError(
                ErrorCode.INVALID_ARGUMENT, f"payload name {item.name!r} is empty or repeated"
            )
        shape = tuple(int(d) for d in item.shape)
        if len(shape) > MAX_PAYLOAD_RANK or math.prod(d for d in shape if d) > MAX_PAYLOAD_SIZE:
            raise RequestError(
                ErrorCode.INVALID_ARGUMENT,
                f"payload {item.name!r} has shape {list(shape)[: MAX_PAYLOAD_RANK + 1]}"
                f"{' ...' if len(shape) > MAX_PAYLOAD_RANK + 1 else ''}: at most "
                f"{MAX_PAYLOAD_RANK} dimensions whose nonzero sizes multiply to at most "
                f"{MAX_PAYLOAD_SIZE}",
            )
        if math.prod(shape) != len(item.values):  # exact: np.prod wraps past int64
            raise RequestError(
                ErrorCode.INVALID_ARGUMENT,
                f"payload {item.name!r} has {len(item.values)} values for shape {list(shape)}",
            )
        payloads[item.name] = np.asarray(item.values, dtype=np.float32).reshape(shape)
    if msg.draft_hidden or msg.draft_hidden_size:
        if DRAFT_HIDDEN in payloads:
            raise RequestError(
                ErrorCode.INVALID_ARGUMENT,
                f"{DRAFT_HIDDEN} is given twice: as bytes and as a payload",
            )
        payloads[DRAFT_HIDDEN] = _draft_hidden(msg.draft_hidden, msg.draft_hidden_size)
    return payloads


def _draft_hidden(data: bytes, size: int) -> npt.NDArray[np.float32]:
    """``VerifyRequest.draft_hidden`` as float32 rows (rows × ``size``)."""
    if size <= 0 or len(data) % (2 * size):
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"{DRAFT_HIDDEN} has {len(data)} bytes, not rows x draft_hidden_size ({size}) x 2 "
            "(float16)",
        )
    return np.frombuffer(data, dtype="<f2").reshape(-1, size).astype(np.float32)
