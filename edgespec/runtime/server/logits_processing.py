"""What the engine does to a verification's target rows before the session's rule reads
them (:func:`processed_rows`): the session's ``logit_bias`` is added, then its penalties
are made (:mod:`edgespec.core.penalties`), then, while its output is shorter than
``min_tokens``, the tokens it would end at get no probability (-inf:
:mod:`edgespec.core.stop_rules`). Each row after its own context: the committed tokens,
then the draft tokens before the row (a chain's first j for row j; a tree node's ancestors
and itself for the node's row). On the host, in float32 as the rows are; a session with
none of them gets its rows as they were (left on the backend's device)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from edgespec.core.penalties import penalize_rows
from edgespec.runtime.backends.logit_rows import HostRows, LogitRows
from edgespec.runtime.messages import SessionSpec, VerifyCall
from edgespec.runtime.server.verification import ending_tokens


def processed_rows(
    rows: LogitRows,
    spec: SessionSpec,
    committed: Sequence[int],
    call: VerifyCall,
    eos: frozenset[int],
) -> LogitRows:
    """``call``'s K + 1 target ``rows`` of a session opened with ``spec`` that committed
    ``committed`` (its prompt and output so far), biased, penalized, and the tokens it ends
    at (the target's ``eos`` and its stop ids: :func:`ending_tokens`) masked in rows before
    its ``min_tokens``-th output token."""
    sampling = spec.sampling
    num_output = len(committed) - len(spec.prompt_token_ids)  # this session's
    ends = ending_tokens(sampling, eos) if num_output < sampling.min_tokens else frozenset()
    if not sampling.logit_bias and not sampling.penalized and not ends:
        return rows
    out = np.array(rows.host(), dtype=np.float32, copy=True)
    if sampling.logit_bias:
        ids = np.array([t for t, _ in sampling.logit_bias], dtype=np.intp)
        out[:, ids] += np.array([b for _, b in sampling.logit_bias], dtype=np.float32)
    paths = (
        draft_paths(call.draft_token_ids, call.draft_parents) if sampling.penalized or ends else []
    )
    if sampling.penalized:
        penalize_rows(out, committed, spec.num_prompt_tokens, paths, sampling.repetition_penalty,
                      sampling.frequency_penalty, sampling.presence_penalty)  # fmt: skip
    if ends:  # row j follows j draft tokens (a tree's row: its node's depth)
        short = [j for j, path in enumerate(paths) if num_output + len(path) < sampling.min_tokens]
        out[np.ix_(short, sorted(ends))] = -np.inf
    return HostRows(out)


def draft_paths(draft: Sequence[int], parents: Sequence[int] | None) -> list[tuple[int, ...]]:
    """The draft tokens before each of a block's K + 1 rows: a chain's row j follows its
    first j; a tree's root row follows none, node i's row its path from the root to i."""
    if parents is None:
        return [tuple(draft[:j]) for j in range(len(draft) + 1)]
    node_paths: list[tuple[int, ...]] = []
    for token, parent in zip(draft, parents, strict=True):
        node_paths.append((*(node_paths[parent] if parent >= 0 else ()), token))
    return [(), *node_paths]
