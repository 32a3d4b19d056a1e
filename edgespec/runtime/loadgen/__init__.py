"""``edgespec bench serve``: a load generator for a verification server (closed-loop or
Poisson arrivals, N drafting clients in worker processes, an SLO-class mix, bundled prompts),
with faults at set times (client processes killed, the server restarted) and every finished
output checked against centralized decoding."""
