"""Speculative-decoding core: shared record types (a generation's sampling,
:mod:`.sampling_params`), accept/reject math, draft-logit features, and the rules both hosts
share (a prefill part's size, :mod:`.prefill_parts`; the sampling
cuts' order and ranges, :mod:`.sampling_cuts`; the penalties, :mod:`.penalties`; where an
output may end, :mod:`.stop_rules`; what a run leaves unfinished and when such a request is
already sure to miss its SLO, :mod:`.unfinished`)."""
