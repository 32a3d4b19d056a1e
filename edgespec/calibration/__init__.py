"""``edgespec calibrate``: one small scenario run for real and in the simulator
(docs/CALIBRATION.md).

* :mod:`.command` — the flags and the run, step by step; ``comparison.md``;
* :mod:`.checks` — the refusals before anything loads or the folder is claimed;
* :mod:`.fresh_profile` — the pair profiled at the scenario's shapes, and the fit's
  summary and held-out R² warning;
* :mod:`.runs` — the real loopback run and the simulator's replay of it;
* :mod:`.folder` — the folder claimed for one calibration, and the partial profile a
  stop while profiling keeps there (``--resume``);
* :mod:`.stops` — what a calibration stopped part way leaves, and how to go on;
* :mod:`.comparison` — both runs summarized by the same code, their differences.
"""
