"""The edge drafter: the device's side of distributed speculative decoding.

* :mod:`.config` — ``DrafterConfig`` (``edgespec draft``, its OpenAI endpoint): the edge's
  frozen, validated configuration;
* :mod:`.config_access` — its servers' addresses, CA, TLS server name and routing policy,
  checked as it is built;
* :mod:`.config_sampling` — its token budget, temperature and sampling cuts (top-k, top-p,
  min-p), checked as it is built;
* :mod:`.drafter` — the loop ``generate(verifier, drafter, prompt, sampling, options,
  window)``: distributed rounds and fused runs, when to reconnect, ``RoundRecord`` /
  ``RequestRecord``;
* :mod:`.round_loop` — ``RoundLoop``: the drafter's rounds until the request ends, and
  ``RECOVERABLE``, the errors a lost session survives;
* :mod:`.rounds` — the pieces of one round shared by the drafter's loop and the server's
  fused loop (``decide``, ``capped_gamma``, ``play_round``) and the ``Verifier`` /
  ``FusedVerifier`` Protocols;
* :mod:`.ledger` — ``Ledger``: what the device keeps of a generation, round by round (its
  tokens and their log-probabilities handed on as they arrive), and ``round_outcome``, what
  the window history records of a verdict;
* :mod:`.fused_handover` — the device's side of a fused run: the session and its window
  history handed to the server, each fused round recorded as it arrives, the history, window
  state and next decision taken back;
* :mod:`.reconnect` — ``reopen`` (a lost session reopened with every committed token as its
  prompt, retried until the server is back or the generation is ``Cancelled``),
  ``retry_unavailable`` (the one retry loop: reopens, first opens, routing while no server
  answers) and ``close_quietly``;
* :mod:`.bounded_calls` — an open waiting no longer than what is left of its retries, a
  verify call no longer than what is left of the progress budget (``open_bounded``,
  ``verify_bounded``), where the verifier can;
* :mod:`.server_side` — the server-side baselines' ``Generate`` stream (centralized,
  fused), its first chunk asked again while the server is unreachable;
* :mod:`.session_ids` — the session ids made from the ``client_id`` (a new generation's,
  the endpoint's) and the most characters they and a reconnect's add to it;
* :mod:`.block_limit` — a window policy's largest block against the server's
  ``max_draft_tokens``, before a round is drafted;
* :mod:`.progress` — a generation's budget for making progress (``--max-reconnects``,
  ``--progress-timeout-s``) and ``NoProgress``;
* :mod:`.routing` — ``route(servers, policy, rng)``: live ``ServerLoad`` s from the ``Stats``
  RPC (every server asked at once, at most 1 s: a hung one left out; those the caller
  knows to be down not asked), the routing policy's choice, checked; ``route_retrying``:
  asked again while no server
  answers, within the retry budget a new request's routing and first open share;
* :mod:`.draft_backends` — ``make_drafter``: the draft backend ``--draft NAME`` stands for
  (prompt lookup, a model, lookup first, a token tree, a feature draft, a llama.cpp chain);
* :mod:`.semantic` — the device's side of semantic verification (WISV): ``SemanticRequest``,
  ``choose_upload`` (FH/SH from the handshake RTT), ``SemanticReport``;
* :mod:`.drafting_server`, :mod:`.batched_draft`, :mod:`.drafting_results`,
  :mod:`.drafting_sessions` — Zhu et al.'s batched edge drafting server
  (``run_drafting_server``): one draft model drafting greedy blocks for many sessions per
  forward pass, each on its own KV, what a run returns, and its sessions on the server.
"""
