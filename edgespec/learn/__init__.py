"""Learning tools: distillation of draft models, trace capture from real model pairs, the
trained policies (stop predictor, AWC's WC-DNN, WISV's decision head).

* :mod:`.command` — ``edgespec train``'s subcommands;
* :mod:`.progress` — the progress bars of long training work;
* :mod:`.settings_checks` — checks shared by the training settings, and the ``--width`` type;
* :mod:`.run_settings` — a folder's settings record (``run.json`` and the others), checked
  by every run continuing it;
* subpackages: :mod:`.drafts`, :mod:`.traces`, :mod:`.stop`, :mod:`.awc`, :mod:`.wisv`.
"""
