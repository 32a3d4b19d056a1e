"""The records the handler sets emit per round and per batch, built with
:func:`~edgespec.core.frozen.frozen_builder` (the same frozen instances as the classes'
``__init__`` builds, at a fifth of the cost: a run emits one per verified block)."""

from __future__ import annotations

from edgespec.core.frozen import frozen_builder
from edgespec.core.types import BatchRecord, RoundRecord

round_record = frozen_builder(RoundRecord)
"""``RoundRecord(*fields)``, every field given, in declaration order."""
batch_record = frozen_builder(BatchRecord)
"""``BatchRecord(*fields)``, every field given, in declaration order."""
