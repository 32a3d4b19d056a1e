"""WISV (seed 003) on the real pair: ``edgespec reproduce wisv-real-pair``.

The simulator's reproduction (:mod:`edgespec.reproduce.wisv`) cannot judge accuracy; this
one runs the runtime's semantic verification rule with the decision head trained on the
real pair (Gemma 3 270M target, the bundled draft; ``edgespec/data/wisv/``) and judges
V5 (Fig. 3: answer quality against the threshold, on a poor and a good channel) and V6
(Figs. 6–7: latency against the window over an emulated Wi-Fi-like link, adaptive FH/SH,
against greedy SD). :mod:`.runs` runs the pair, :mod:`.claims` builds the claim rows from
the results, :mod:`.report` writes the run folder.

``edgespec reproduce wisv-heldout`` (:mod:`.heldout_command`) is the shipped default's
held-out check (:mod:`.heldout`), its plans :mod:`.heldout_plan` (full, quick, what the
quick one leaves out), its run folder :mod:`.heldout_folder` (records, plan, claiming the
folder).
"""
