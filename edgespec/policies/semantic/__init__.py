"""WISV (seed 003): semantic (lossy) verification with a CSI-aware decision head.

``head`` (the decision head's inference, numpy; Eqs. 23–27), ``csi`` (the channel-state
features the head reads, built the same way in both hosts), ``judge`` (the one function
both hosts call at a round's mismatches: the head's inputs, its answer checked),
``relabel`` (the CSI-aware relabelling of the training labels, Eqs. 28–31), ``bundled``
(the pair a shipped head was trained for, from the files shipped beside it),
``agreement`` (the shipped head's measured answer agreement and default threshold).
Pure: numpy only; the head trains with torch in :mod:`edgespec.learn.wisv`.
"""
