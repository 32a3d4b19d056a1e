"""Acceptance traces from a real draft/target pair (``edgespec trace``): ``command`` (the
command) with ``checks`` (its flags, prompt sets and outputs, checked before any model
loads), ``pair`` (the pair's models resolved and loaded, their vocabularies checked before
any work; calibrate's too) and ``drafters`` (the drafter it runs); ``settings`` (what a
capture runs per prompt), ``capture`` (the capture, through the runtime's own loop),
``baselines`` (the target alone and assisted generation, timed beside it) and
``acceptance`` (acceptance per output position, greedy or sampled); ``records`` (the
records and their JSONL form), ``record_fields`` (a line's fields read), ``json_line`` (a
record's line, strict JSON), ``replay`` (what a trace's rounds and sequence say) and
``summary`` (the numbers the command reports)."""
