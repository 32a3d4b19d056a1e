"""WISV (seed 003), CSI-aware semantic verification: the place for its reproduction (not
built yet; ``edgespec reproduce wisv`` exits with status 2).

It joins like ``wisp/`` and ``dsd/`` do: ``setup.py`` (the unstated inputs, chosen once and
written down), ``runs.py``, ``claims.py`` (claims V1–V6 of ../shared/SEED-NOTES.md §5 as
:class:`~edgespec.reproduce.claims.ClaimRow` rows: paper, ours, tolerance, verdict) and
``report.py`` (``reproduce(out, quick=..., workers=..., progress=..., command=...)``,
registered in :data:`edgespec.reproduce.command.PAPERS`).
"""
