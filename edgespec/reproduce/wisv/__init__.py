"""WISV (seed 003), CSI-aware semantic verification: ``edgespec reproduce wisv``.

``setup.py`` (the unstated inputs, chosen once and written down: :data:`setup.CHOICES`),
``runs.py`` (Table I, Fig. 4 and Fig. 5's ablation as simulator runs with semantic
verification, :mod:`edgespec.sim.model.semantic`), ``claims.py`` (claims V1–V4 of
../shared/SEED-NOTES.md §5 and Fig. 5 as :class:`~edgespec.reproduce.claims.ClaimRow`
rows: paper, ours, tolerance, verdict) and ``report.py`` (``reproduce(out, quick=...,
workers=..., progress=..., command=...)``, registered in
:data:`edgespec.reproduce.command.PAPERS`). The decision head's reject shares come from
``edgespec/data/wisv/gemma3-270m-acceptance.json`` (``edgespec train wisv``); without it
the command stops and says so. V5 (accuracy) and V6 (hardware) need the real pair.
"""
