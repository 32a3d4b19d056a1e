"""WISP (seed 000), SLO-aware batching with a rejection predictor and a verification-time
estimator: ``edgespec reproduce wisp`` (W1–W10), ``wisp-estimator`` (W9 alone) and
``wisp-serving`` (the real server).

``setup.py`` (the unstated inputs, chosen once, and the four systems' scenarios),
``runner.py`` (one scenario's run and the late-request rule), ``unfinished.py`` (WISP's
capacity with the unfinished requests counted too, a sensitivity), ``runs.py`` (W1–W5 against
the simulator), ``results_file.py`` (their ``results.json``), ``late_decides.py`` (W1's and
W2's capacity rows as settings where the late-request rule decides them), ``operating.py``
(W4's operating point and knees), ``claims.py`` (W1–W3 rows) and ``curve_claims.py`` (W4,
W5 and every W1–W5 row), ``readings.py`` (W4's two readings of Algorithm 1: the printed one
judged, the work-conserving one a sensitivity),
``predictor.py`` (W6–W8 and W10), ``study_claims.py`` (W6, Theorem 1's check, W10),
``predictor_claims.py`` (W7, W8), ``table6.py`` (W8's runs and the drafting speed Table 6
implies, a sensitivity), ``estimator.py`` and ``estimator_command.py`` (W9),
``findings.py`` (REPORT.md's *Findings*), ``quick.py`` (what a quick run leaves out),
``plots.py``, ``report.py`` (the run folder; registered in
:data:`edgespec.reproduce.command.PAPERS`), and ``serving.py``, ``serving_clients.py``,
``serving_flags.py`` (``wisp-serving``).
"""
