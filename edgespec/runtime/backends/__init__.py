"""Model backends behind :class:`TargetBackend` / :class:`DraftBackend`.

* :mod:`.base` — the ``TargetBackend`` / ``DraftBackend`` / ``FeatureDraftBackend``
  Protocols, ``ForwardItem``, ``ForwardOutput``, ``DraftProposal``, ``common_prefix_length``;
* :mod:`.logit_rows`, :mod:`.device_rows` — ``LogitRows``, a pass's rows of one item
  (``HostRows`` on the host; ``DeviceRows`` left on the device, their argmax on the host:
  what a greedy verdict reads), their values copied when asked;
* :mod:`.transformers_backend` — ``TransformersTarget``: batched ragged forward passes with
  explicit masks, the load-time masking probe and exactness self-check;
* :mod:`.batch_invariant` — the exact mode's batch-invariant linear layers and attention;
* :mod:`.exactness` — every backend's load-time self-check (batched against one-at-a-time
  logits, bit for bit) and ``InexactBackendError``;
* :mod:`.attention_mask`, :mod:`.mask_check_cache` — which attention kinds a model has (what
  cannot be masked is refused) and the 4-D masks and positions of every padded pass; the
  probe's pass remembered per weights, dtype, device and versions;
* :mod:`.padded_kv` — the batch KV cache of a padded pass: each item's cached prefix
  left-padded to the longest, each row's real tokens cut back out afterwards;
* :mod:`.padding` — ``pass_groups``: a batch split into passes of similar shape;
* :mod:`.warm_up` — ``warm_up``: one short cold start and decode step before a server is
  ready (a start whose self-check was cached has run no pass yet); ``warm_up_drafter``: a
  draft model's first block before the OpenAI-compatible endpoint listens;
* :mod:`.lm_head` — ``plain_head`` / ``blocked_head``: the LM head in vocabulary blocks
  (``TransformersTarget(blocked_head_logits=True)``, lossy mode on a CPU only);
* :mod:`.ngram` — ``suffix_match_next`` (the prompt lookup every drafter uses) and
  ``NgramDrafter``;
* :mod:`.draft_shaping` — ``DraftShaping``: a request's bias, penalties and cuts made on a
  chain drafter's own rows (``TokenColumns``: a trimmed draft's columns), so that it
  proposes what the target's shaped rows favour;
* :mod:`.transformers_draft`, :mod:`.hybrid_draft`, :mod:`.tree_draft`, :mod:`.feature_draft`
  — ``TransformersDraft`` (any causal LM, its own KV cache) and ``HybridDraft`` (prompt
  lookup first); ``TreeDraft``
  (a token tree, one draft pass per depth); ``FeatureDraft`` (EAGLE-style, from the target's
  returned hidden states);
* :mod:`.llamacpp_context`, :mod:`.llamacpp_backend`, :mod:`.llamacpp_batch`,
  :mod:`.llamacpp_tree`, :mod:`.llamacpp_draft` — llama.cpp: one model and context in the
  exact (batch-invariant) configuration, the ``--backend llamacpp`` target, a pass's decode
  batches (logit rows only where read; hidden states in a batch of their own), token trees
  on one sequence, and the chain drafter; :mod:`.llamacpp_checks`, a served context's
  settings against the model, before its KV memory is allocated.
"""

from edgespec.runtime.backends.base import (
    DraftBackend,
    DraftProposal,
    ForwardItem,
    ForwardOutput,
    KVState,
    TargetBackend,
)
from edgespec.runtime.backends.logit_rows import HostRows, LogitRows

__all__ = [
    "DraftBackend",
    "DraftProposal",
    "ForwardItem",
    "ForwardOutput",
    "HostRows",
    "KVState",
    "LogitRows",
    "TargetBackend",
]
