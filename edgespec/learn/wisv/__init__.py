"""WISV (seed 003): the decision head's dataset from a real pair (``capture``, with GSM8K
outcomes in ``answers`` and the free-text continuation-similarity criterion in
``similarity``) and its training (``train``); ``command`` holds
``edgespec train wisv-data`` and ``edgespec train wisv``, whose flags ``fit_flags`` adds."""
