"""Draft models distilled from a target.

``edgespec train draft`` (:mod:`.command`, its stages in :mod:`.make_draft`, its early
checks in :mod:`.draft_checks`): a trimmed-vocabulary draft trained (:mod:`.distill`) on
the target's continuations (:mod:`.distill_data`) and teacher-forced text labels
(:mod:`.distill_text`), read back as samples (:mod:`.samples`) from shards written whole
(:mod:`.shard_writing`) into folders that record what made them (:mod:`.shard_manifest`)
and hold one kind of shard and no model (:mod:`.shard_kinds`), then trained and saved
(:mod:`.draft_training`).
``edgespec train feature-draft`` (:mod:`.feature_command`, :mod:`.feature_train`,
:mod:`.feature_training`): an EAGLE-style draft on the target's features, kept in a folder
that records whose they are (:mod:`.feature_record`), also of ``edgespec train
text-shards``' token shards (:mod:`.text_shards`).
Both trainings resume where they stopped from a checkpoint in ``--out``
(:mod:`.checkpoint`, the file; :mod:`.checkpointing`, the loop's and the command's side).
"""
