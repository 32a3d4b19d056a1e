"""``edgespec profile``: verification and drafter latency measured on this machine, the
cost models fitted to it and written as the simulator's profiles (docs/PROFILE.md).

* :mod:`.command` — the flags and the run: load, measure with a checkpoint, write, print;
* :mod:`.checks` — the refusals before anything loads or is measured;
* :mod:`.files` — the names of one profile's files (the one place they are made);
* :mod:`.grid` — the grid of batch configurations (WISP App. C), laid out without a model;
* :mod:`.measure` — the grid's configurations timed through the runtime's engine;
* :mod:`.draft` — the drafter's propose calls timed, and its FLOPs;
* :mod:`.draft_batch` — the drafter timed batched over b sessions, as the drafting server runs it;
* :mod:`.fit` — least-squares fits of Eq. 19 and Eq. 17, held-out metrics, intervals;
* :mod:`.pair_fit` — a run's target and drafter samples fitted: Eq. 19, and Eq. 17 over
  the architecture's and Zhu's printed FLOPs;
* :mod:`.run` — measure and fit a pair, write its profile files and report;
* :mod:`.summary` — what the command prints once its files are written: every fit, the files;
* :mod:`.profile_yaml` — the text of one profile file: its header, what it is and measured;
* :mod:`.quality` — when a fit is too poor to use as it is, and the warning then;
* :mod:`.checkpoint` — measured configurations appended as they finish, for ``--resume``;
* :mod:`.draft_checkpoint` — the checkpoint's lines for the drafter's batched timings;
* :mod:`.residuals` — where a written profile's Eq. 19 fit misses (``--residuals``);
* :mod:`.report_file` — a profile's ``NAME-report.json`` read back, bounded and checked;
* :mod:`.samples` — the shipped samples file of one real profile run.
"""
