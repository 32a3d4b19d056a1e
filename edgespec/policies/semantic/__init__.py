"""WISV (seed 003): semantic (lossy) verification with a CSI-aware decision head.

``head`` (the decision head's inference, numpy; Eqs. 23–27), ``csi`` (the channel-state
features the head reads, built the same way in both hosts), ``relabel`` (the CSI-aware
relabelling of the training labels, Eqs. 28–31), ``bundled`` (the pair a shipped head was
trained for, from the files shipped beside it). Pure: numpy only; the head trains with
torch in :mod:`edgespec.learn.wisv`.
"""
