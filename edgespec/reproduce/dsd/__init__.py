"""DSD (seed 004), DSD-Sim and adaptive window control: ``edgespec reproduce dsd`` and
``edgespec reproduce dsd-real-pair``.

``setup.py`` (the one setting every run shares) and ``load.py`` (the closed loop's think
time, fitted once by Little's law) with ``choices.py`` (the chosen inputs, the
sensitivities shown beside them and DSD-Sim's simplifications, each with its reason),
``paper.py`` (the printed numbers and the tolerances around them), ``runs.py`` (the plan
and its runs) and ``summary.py`` (a run reduced to what the claims read); the claims as
rows: ``claims.py`` (D1, D4, D5, and all of one cost mode's), ``stack_claims.py`` (D2),
``crossover_claims.py`` (D3), ``sweep_claims.py`` (D6, D7), with ``causes.py`` (why each
misses) and ``findings.py`` (REPORT.md's *Findings*), ``paper_errors.py`` (its *Where the paper is
wrong*), ``modes.py`` (the physical mode, the paper's system, is the headline's; DSD-Sim compat
a named mode counted apart); ``quick.py`` (what a quick run
leaves out of the full one); ``plots.py`` (the figures),
``report.py`` (``reproduce(out, quick=..., workers=..., progress=..., command=...)``,
registered in :data:`edgespec.reproduce.command.PAPERS`) and ``real_pair.py`` (AWC over an
emulated link on the real pair).
"""
