"""Block models: what a session's rounds draft and send, and how their verification is
judged, one module per kind. A session gets one when it opens
(:class:`~edgespec.sim.blocks.choice.SessionBlocks`), and the reference round
(:mod:`edgespec.sim.loop`) calls its two steps, whatever the kind:

* ``draft(s, γ, first)``: what the round sends (``s.sent``, ``s.gamma_eff``) and its drafting
  time; ``uplink_s``: the block's uplink latency;
* ``judge(s)``: the tokens accepted and committed, and the size of any extra hop the verdict
  needs before it goes down (``extra_hops_s``).

=====================  ========================================================
kind                   module
=====================  ========================================================
chain                  :mod:`~edgespec.sim.blocks.chain`: γ drafted tokens, verified
                       greedily (or by rejection sampling); the acceptance model
                       draws the run
centralized            :mod:`~edgespec.sim.blocks.centralized`: nothing drafted, the
                       target decodes one token a round (``mode: centralized``)
token-tree             :mod:`~edgespec.sim.blocks.tree`: a request's captured
                       token-tree rounds replayed (nodes sent, accepted as captured)
stop-cut               :mod:`~edgespec.sim.blocks.stop_cut`: a chain cut where the
                       stop predictor says stop (WISP §4.1)
semantic verification  :mod:`~edgespec.sim.blocks.semantic`: a chain whose mismatches
                       go to WISV's decision head (FH/SH, SH's second hop)
=====================  ========================================================

DSD-Sim's ``fixed_rounds`` (``dsdsim_compat``) changes what any kind commits: a round
advances by what it drafted (the kind is then named ``fixed-round <kind>``).

Adding a kind: a module with a class of the
:class:`~edgespec.sim.model.entities.Block` protocol (subclass
:class:`~edgespec.sim.blocks.chain.ChainBlock` to share its steps) and a line in
:meth:`SessionBlocks.for_session <edgespec.sim.blocks.choice.SessionBlocks.for_session>`;
the inbound handler sets run the plain chain only (they inline it).
"""
