"""The real runtime: gRPC verification server, engine, edge drafters, model backends
(docs/RUNTIME.md).

Only :mod:`edgespec.runtime.wire.grpc_common`, :mod:`~edgespec.runtime.wire.grpc_server` and
:mod:`~edgespec.runtime.wire.grpc_client` import grpc (with the generated stubs in
:mod:`edgespec.runtime.proto`); everything else (engine, server
scheduler, drafter loop, backends) is usable in-process, e.g. by
:func:`edgespec.runtime.wire.inprocess.speculative_generate`. Nothing here imports the
simulator; the policies in :mod:`edgespec.policies` are what both hosts share.

Top-level modules, what both sides share:

* :mod:`.messages` — frozen records exchanged by drafter, server and engine
  (``SessionSpec``, ``VerifyCall``, ``VerifyOutcome``, ``VerifyReply``, ``ServerStats``) and
  ``PROTOCOL_VERSION``;
* :mod:`.errors` — request errors with an ``ErrorCode`` (mapped onto gRPC status codes in
  :mod:`.wire.grpc_common`);
* :mod:`.validation` — request checks (vocabulary, draft distribution, trees) with the exact
  messages docs/RUNTIME.md's validation table lists;
* :mod:`.sampling` — logits to probabilities (temperature, top-k, top-p, min-p) and the
  compact draft distribution both sides read alike;
* :mod:`.compact_probs` — ``CompactProbs``: a draft block's q as each row's nonzero entries,
  as the server holds, checks and verifies it (never K × the vocabulary);
* :mod:`.open_files` — the process's open-file limit raised for a server's connections
  (the gRPC server's and the HTTP endpoint's);
* :mod:`.detokenize` — token ids to text a token at a time, complete characters only (an
  unfinished byte-token run held): the HTTP endpoint's text and ``edgespec draft``'s;
* :mod:`.deferred_signals` — Ctrl-C and SIGTERM deferred while a block runs, then
  delivered: a process's start done whole (``edgespec bench serve``), a bounded cleanup;
* :mod:`.child_processes` — the context the program's drafter and client processes start
  in: forked from a fork server that imported torch once (``calibrate``, ``bench serve``,
  ``reproduce wisp-serving``);
* :mod:`.testing` — synthetic models for tests and benchmarks (``tiny_llama``,
  ``noisy_copy``, ``layer_truncated_copy``, ``synthetic_target``).

Subpackages, each listing its modules in its own docstring: :mod:`.proto` (the protocol),
:mod:`.wire` (protobuf, gRPC, in-process and emulated links), :mod:`.server` (the
verification service and engine), :mod:`.edge` (the drafter), :mod:`.backends` (models),
:mod:`.commands` (the command line), :mod:`.openai_api` (the HTTP endpoint) and
:mod:`.loadgen` (``edgespec bench serve``).
"""
