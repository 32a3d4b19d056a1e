"""Speculative-decoding core: shared record types, accept/reject math, draft-logit features."""
