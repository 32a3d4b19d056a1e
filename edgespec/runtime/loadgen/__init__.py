"""``edgespec bench serve``: a load generator for a verification server (closed-loop or
Poisson arrivals, N drafting clients in worker processes, an SLO-class mix, bundled prompts),
with faults at set times (client processes killed, the server restarted) and every finished
output checked against centralized decoding.

* :mod:`.spec` — ``LoadSpec`` (clients, processes, arrivals, SLO mix, duration, drain, faults,
  mode), validated once; the parsers of ``--slo-mix``, ``--faults``, ``--mode``;
* :mod:`.prompts` — a bundled prompt set as token ids (the target's tokenizer, or bytes for
  the synthetic target);
* :mod:`.worker` — a client process: its clients as threads, each request's arrival, start
  and end sent on its own pipe (:mod:`.messages`);
* :mod:`.run` — ``LoadRun``: the client processes started and watched, faults applied at
  their times, each request id led by the run's random tag; :mod:`.tally` — every request's
  fate (finished, failed, killed, lost, never served; :mod:`.outcome`);
* :mod:`.server_process` — ``ServerProcess``: the bench's own ``edgespec serve`` child on a
  fixed loopback port, killed and started again for a fault;
* :mod:`.check`, :mod:`.scrape` — every finished output against the server's centralized
  decoding; the server's Prometheus counters against the clients' counts;
* :mod:`.report`, :mod:`.session` — the report (Markdown, JSON; metrics from
  :mod:`edgespec.metrics`); one invocation from flags to report.
"""
