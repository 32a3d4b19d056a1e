"""The runtime's command line.

* :mod:`.serve`, :mod:`.serve_arguments`, :mod:`.serve_target`, :mod:`.serve_service` —
  ``edgespec serve``: its flags and the parsers of list-valued ones, ``--backend`` and the
  llama.cpp context's flags, ``load_target``; the checks before anything loads, the decision
  head and the verification rules it allows, the co-located draft and the service;
* :mod:`.serve_profile` — ``edgespec serve --profile`` checked against what is served: a
  drafter's or another model's profile refused, one used beyond what it measured said;
* :mod:`.draft`, :mod:`.draft_arguments`, :mod:`.draft_connect`, :mod:`.draft_run`,
  :mod:`.draft_output`, :mod:`.closed_whole`, :mod:`.draft_context`,
  :mod:`.draft_compare` — ``edgespec draft``: its flags and the ``DrafterConfig``
  overrides they make, the server reached (routed across several, waiting through a
  restart) before anything loads, ``DraftRun`` (one request in any mode, timed alike, with
  its stats line and ``--records``), its output as it streams and the notices of its
  retries (reopens, resends), its verifier's
  session closes held against a second Ctrl-C, the prompt and ``--max-new-tokens`` checked
  against the target's context before the draft loads, ``--compare``'s speed-up and the
  server's numerics it is over;
* :mod:`.sampling_arguments` — ``edgespec draft``'s ``--temperature``, its cuts
  (``--top-k``, ``--top-p``, ``--min-p``) and ``--seed``, refused where nothing reads them;
* :mod:`.server_access_arguments` — ``--auth-token``, ``--tls-ca`` and ``--tls-server-name``,
  shared by ``edgespec draft`` and ``edgespec drafting-server``;
* :mod:`.link_arguments` — ``edgespec draft``'s emulated-link flags (``--link-*``), checked
  as the link checks them;
* :mod:`.endpoint_arguments` — ``edgespec draft --serve-openai``'s limits (``--openai-max-*``);
* :mod:`.draft_checks` — ``edgespec draft``'s checks against the window, the server's
  draft-block limit and the models, before anything slow happens;
* :mod:`.draft_chat` — ``edgespec draft --chat``: the prompt as a conversation through the
  tokenizer's chat template, the reply ending at its end of turn;
* :mod:`.draft_conversation` — ``edgespec draft --interactive``: stdin's lines as the turns
  of one conversation;
* :mod:`.stop_arguments` — ``--stop-predictor`` / ``--stop-threshold``, shared by ``edgespec
  draft`` and ``edgespec trace``;
* :mod:`.cpus` — ``--cpus`` and ``--threads``: a command's process bound to CPUs of its own,
  and torch's threads;
* :mod:`.stages` — ``Stages``: ``edgespec serve``'s and ``edgespec draft``'s start-up, each
  stage said on stderr as it starts;
* :mod:`.signals` — SIGTERM stopping a command as Ctrl-C does, and the line and exit status
  (130, 143) of a command so stopped;
* :mod:`.drafting_server`, :mod:`.drafting_server_arguments`, :mod:`.drafting_server_plan`,
  :mod:`.drafting_server_profiles` — ``edgespec drafting-server``, its flags (checked
  before the server is asked or the draft loads), ``--plan`` (a ``pipeline:`` scenario, a
  file or a bundled one's name: its planner plans the batches and γ) and its profiles
  said when measured on another model or over a smaller range than the plan's;
* :mod:`.bench_serve`, :mod:`.bench_prefix` — ``edgespec bench serve`` (the load generator is
  :mod:`edgespec.runtime.loadgen`) and ``edgespec bench prefix`` (a follow-up round on a cached
  prefix against a cold start).
"""
