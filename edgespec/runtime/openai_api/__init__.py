"""An OpenAI-compatible HTTP endpoint on the edge drafter (``edgespec draft --serve-openai``).

``/v1/completions``, ``/v1/chat/completions`` (``stream: true`` as server-sent events),
``/v1/models``, ``/health``, ``/ready`` and ``/metrics``; every request runs distributed
speculative decoding against the verification server(s), or, asked ``edgespec.mode``
``"centralized"`` (every request's default with ``--mode centralized``), the server's own
decoding.

* :mod:`.serve`, :mod:`.app` — uvicorn started from ``edgespec draft`` in a thread of its
  own; the routes;
* :mod:`.stopping`, :mod:`.in_flight` — Ctrl-C and SIGTERM alike: the requests in flight
  finished within a drain deadline, or cancelled by a second signal (503s, sessions closed);
* :mod:`.server_facts` — what the servers' Health says as the endpoint starts (context,
  draft-block limit, SLO classes, one model), so that requests beyond it are refused up
  front;
* :mod:`.server_watch`, :mod:`.health`, :mod:`.outages` — what the endpoint last saw of each
  server (reachable, unreachable, refusing its token, since when: every call's outcome and
  short cached probes), answered by ``/health`` (liveness), ``/ready`` (503 while no
  server is reachable) and ``/metrics`` (a gauge per server); a request 503 at once when
  every server has been unreachable for longer than it would wait; an outage logged in two
  lines, its start and its end, every 503 counted in exactly one line;
* :mod:`.connections`, :mod:`.http_connection`, :mod:`.descriptors` — the HTTP connections
  bounded before the app: how many (within the open-file limit; a quarter from one address),
  how long and how large a request head may be, malformed HTTP refused with h11's reason, a
  connection closed after a response to a body it did not read, a request answered after
  its client half-closed;
* :mod:`.throttle`, :mod:`.uvicorn_lines` — log lines clients can cause at line rate
  (failed ``accept()`` calls, malformed requests, 502s for a token the server refuses,
  outages) let through at most one per 10 s, counting the others; uvicorn's per-request
  lines kept out;
* :mod:`.access` — who may call it: an API key on every route but the probes and
  ``/metrics`` (a 401 before the body is read), the web origins browsers may call from;
* :mod:`.extension` — a request's ``edgespec`` object: ``slo_class``, ``window``, ``mode``;
* :mod:`.body`, :mod:`.schema`, :mod:`.fields`, :mod:`.messages` — a body said to be JSON
  in UTF-8, read as it arrives and refused past its limit, then decoded; fields checked
  into a ``ParsedRequest`` (a field the endpoint does not apply refused, never ignored);
  the prompt checked and bounded before it is tokenized (characters, messages, roles);
* :mod:`.sampling_fields` — a request's ``temperature`` and sampling cuts (``top_k``,
  ``top_p``, ``min_p``), each a 400 naming it when out of range or given at temperature 0;
  its ``logit_bias``, penalties, ``min_tokens``, ``n`` and ``logprobs``;
* :mod:`.tokenizing`, :mod:`.prompts`, :mod:`.chat_prompt`, :mod:`.chat_fields` — prompts
  tokenized one at a time off the event loop, a 429 when too many wait; the prompt as token
  ids (text, ids, or chat messages through the chat template, special-token text in their
  contents kept as text; vLLM's rendering fields);
* :mod:`.admission`, :mod:`.waits` — how many generations run at once, how many may wait,
  how many requests one client may have in flight; waits that end when the client leaves;
* :mod:`.logprob_fields` — the returned tokens' log-probabilities as OpenAI shapes them;
* :mod:`.request_checks` — what a request is refused before it waits for a worker
  (a mode the endpoint cannot run, an SLO class, the target's context);
* :mod:`.request_metrics` — how the admitted requests ended, by ``edgespec.mode``, their
  tokens and their seconds to the first token and to the end, on ``/metrics``;
* :mod:`.prompt_echo` — ``echo``: the prompt's text before the completion's, with its
  tokens' log-probabilities when asked;
* :mod:`.choices` — a request's ``n`` choices, generated in turn, each its own session
  and seed;
* :mod:`.tokenizer_routes` — vLLM's ``/tokenize``, ``/detokenize`` and
  ``/tokenizer_info`` with the endpoint's tokenizer;
* :mod:`.prompt_batch` — a list of prompts on ``/v1/completions``: each parsed and
  checked as a request, their choices in turn, an error naming the prompt's place;
* :mod:`.edge_setup` — ``EdgeSetup``, what every request shares;
* :mod:`.generation`, :mod:`.decoding`, :mod:`.session_tracker`, :mod:`.text`,
  :mod:`.streaming` — one request's generation in a worker thread, distributed (its
  sessions closed on the server however it ends) or centralized (the server's stream);
  committed ids to text deltas (held back where a stop sequence may begin); deltas as
  server-sent events;
* :mod:`.responses`, :mod:`.errors` — bodies in the OpenAI shapes; failures as OpenAI error
  bodies with the status an OpenAI client expects.
"""
