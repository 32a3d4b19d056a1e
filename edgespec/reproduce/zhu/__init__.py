"""Zhu et al. (seed 001), pipelined speculative decoding over an edge drafting server:
``edgespec reproduce zhu``.

``setup.py`` (the unstated inputs, chosen once and written down), ``runs.py`` (the
simulator runs through :mod:`edgespec.reproduce.jobs`; a draw's latencies in
``latencies.py``), ``events.py`` and ``exhaustive.py``
(the plan replayed as events with sampled acceptance; the DP against the optimum on small K),
``claims.py`` (claims Z1–Z5 of ../shared/SEED-NOTES.md §5 as
:class:`~edgespec.reproduce.claims.ClaimRow` rows: paper, ours, tolerance, verdict; Z1 in
``fig6_claims.py``, Z4 in ``bandwidth.py``, the figure values in ``stats.py``),
``coverage.py`` (what a quick run leaves out of the full one), ``causes.py`` (why rows miss
or hold by construction, and the report's *Findings*), ``decided.py`` (the verdicts the
formula or an input we chose decides: by construction, or settings), ``paper_errors.py``
(its *Where the paper is wrong*: the paper's known errors, Algorithm 1's printed recursion
run on one draw) and
``report.py`` (``reproduce(out, quick=..., workers=..., progress=..., command=...)``,
registered in :data:`edgespec.reproduce.command.PAPERS`).
"""
