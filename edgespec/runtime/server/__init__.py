"""The verification server: asyncio, no grpc (the servicer is :mod:`edgespec.runtime.wire`).

Service and admission:

* :mod:`.service` — ``VerificationService``: queue, batching policy, engine, replies; fused
  runs with the server's window policy; the centralized and fused baselines; idle-session
  expiry; stats;
* :mod:`.scheduler` — continuous batching: the queue shown to the policy whenever the
  engine is free, one forward pass per batch, a failed batch retried call by call;
* :mod:`.resends` — a verify call sent again after its deadline: it takes over the same
  call still queued or being verified, or keeps the arrival of one its caller left;
* :mod:`.batch_groups` — ``BatchGroups``: a client's grouped verify calls (one of its
  batches) held from the policy's view until all have come or ``group_wait_s`` passed;
* :mod:`.admission` — the session-state, per-client and queue rules of a verify call, and
  the ``PendingVerification`` it becomes (sizes, ``expected_accepted``, ``deadline_s``);
* :mod:`.clients` — ``ClientBook``: session owners and identities, the per-client limits,
  the configured SLO classes;
* :mod:`.batch_planner` — ``BatchPlanner``: the batching policy's plan over the whole queue
  under the server's limits, checked by the shared contract;
* :mod:`.batching` — ``build_batching``: any registered batching policy from the config (a
  ``wisp`` profile becomes Eq. 19 coefficients);
* :mod:`.config` — ``ServerConfig`` (``edgespec serve``) and ``check_tls_pair``;
* :mod:`.counters`, :mod:`.prometheus`, :mod:`.round_log` — the service's counters and the
  ``ServerStats`` built from them, the optional ``/metrics`` endpoint, ``--round-log``;
* :mod:`.metrics_http` — the HTTP server under ``/metrics``, its connections bounded (a cap,
  a request-head deadline and size, a response deadline).

Engine and verification:

* :mod:`.engine` — ``VerificationEngine``: batched verification over the per-session KV
  prefix cache (a batch's forward pass, the verdicts);
* :mod:`.commit` — a verdict committed into its session: its tokens, what its KV keeps, the
  ``VerifyOutcome``;
* :mod:`.committed_logprobs` — the committed tokens' log-probabilities under the target's
  raw rows, and their likeliest alternatives', for a session that asks;
* :mod:`.prompt_logprobs` — a session's prompt scored in parts as it is prefilled, returned
  with its first verification (``SamplingParams.prompt_logprobs``);
* :mod:`.prefill_parts` — a long uncached context forwarded one part per batch
  (``prefill_part_tokens``), its call queued again between parts;
* :mod:`.engine_sessions` — ``SessionTable`` (open, close, idle expiry, the LRU token budget
  over the sessions' KV caches);
* :mod:`.engine_counters` — ``EngineTally``, the engine's running counts, and
  ``EngineCounters``, their totals with the cache's size;
* :mod:`.session_record` — ``EngineSession`` (one open session's state) and what it holds
  against the token budget (KV tokens, kept hidden rows), dropped when evicted;
* :mod:`.returned_hidden` — the target's hidden rows a ``return_hidden`` session's reply
  carries: all from 0 in its first round, then from its newest committed token on;
* :mod:`.engine_checks` — what the engine refuses, and why: a session's spec when it opens,
  a verify call before it is queued;
* :mod:`.logits_processing` — a session's ``logit_bias`` and penalties made on its target
  rows before its rule reads them;
* :mod:`.verification` — the ``VerificationRule`` Protocol, ``ExactRule`` (greedy chains and
  trees, speculative sampling of chains and trees), ``EXACT_RULES``; the optional
  ``SessionRuleFactory`` and ``HiddenStateRule``;
* :mod:`.semantic`, :mod:`.hidden_followup` — WISV's lossy ``"semantic"`` rule with its
  decision head, and the engine's side of the SH upload (a pass kept waiting for the draft's
  hidden states, then decided without a second forward).

Fused rounds and baselines:

* :mod:`.fused_setup` — a fused request's checks, draft backend and session
  (``start_fused_run``), and ``ServerWindow`` (the server's window policy under a lock);
* :mod:`.fused_run` — the fused-run loop ``run_fused_rounds`` on a worker thread, its rounds
  verified through the service's queue;
* :mod:`.worker_bridge` — ``ServiceVerifier`` (a worker's verifier whose calls run on the
  service's event loop) and ``from_worker`` (a worker's items streamed back to the loop);
* :mod:`.run_threads` — ``ThreadPerRun``, the executor that gives each fused run a thread
  of its own, ended with it;
* :mod:`.cloud_only` — cloud-only fused rounds (``--fused-rounds cloud_only``): an empty block
  verified, i.e. the target's next token;
* :mod:`.fused_baseline` — the whole-request fused baseline (``Generate``, fused mode);
* :mod:`.centralized` — the centralized baseline (``Generate``, not fused), one token a round.
"""
