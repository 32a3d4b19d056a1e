"""WISV (seed 003), CSI-aware semantic verification: ``edgespec reproduce wisv``.

``setup.py`` (the unstated inputs, chosen once and written down: :data:`setup.CHOICES`),
``runs.py`` (Table I, Fig. 4 and Fig. 5's ablation as simulator runs with semantic
verification, :mod:`edgespec.sim.model.semantic`), ``table_i.py`` (Table I as printed and
the rows that compare a run with it), ``claims.py`` (claims V1–V3 of
../shared/SEED-NOTES.md §5 as :class:`~edgespec.reproduce.claims.ClaimRow` rows: paper,
ours, tolerance, verdict), ``regimes.py`` (V4, Fig. 4's regimes), ``heads.py`` (the rows
about the head's channel dependence: V1's poor link more permissive, Fig. 5),
``calibrated.py`` (the named mode *calibrated head*: one reject share a link fitted to
Table I at γ = 64, the other cells out of sample, never in the headline) and
``report.py`` (``reproduce(out, quick=..., workers=..., progress=..., command=...)``,
registered in :data:`edgespec.reproduce.command.PAPERS`). WISV's decision head is the
CSI-aware one: its reject shares come from
``edgespec/data/wisv/gemma3-270m-kappa-critical-acceptance.json`` (``edgespec train wisv
--budget kappa-critical``); without it the command stops and says so. Fig. 5's head
without relabelling is ``gemma3-270m-acceptance.json``. V5 (accuracy) and V6 (hardware)
need the real pair (``real_pair/``).
"""
