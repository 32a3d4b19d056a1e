"""The files one profile is, all named from its target profile ``DIR/NAME.yaml`` (or
``NAME.yml``: each sibling YAML takes the target's suffix), here and nowhere else:
``edgespec profile`` writes them (:mod:`edgespec.profiling.run`) and checks its ``--out``
for them, ``edgespec calibrate`` reads a ``--profile``'s draft beside it and keeps its
siblings when it overwrites a folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class ProfileFiles:
    """One profile's files (see :mod:`edgespec.profiling.run` for what each holds)."""

    target: Path
    """``NAME.yaml``: the target's Eq. 19 (``kind: wisp``) profile."""
    target_zhu: Path
    """``NAME-zhu.yaml``: the target's Eq. 17 fit, when the target is a model preset."""
    target_zhu_printed: Path
    """``NAME-zhu-printed.yaml``: the same fit over Zhu's printed FLOPs (a pipeline's)."""
    draft: Path
    """``NAME-draft.yaml``: the drafter's Eq. 19 profile, per pass."""
    draft_zhu: Path
    """``NAME-draft-zhu.yaml``: the drafter's Eq. 17 fit, when the draft is a preset."""
    draft_zhu_printed: Path
    """``NAME-draft-zhu-printed.yaml``: the same fit over Zhu's printed FLOPs."""
    report: Path
    """``NAME-report.json``: every sample and fit."""
    samples: Path
    """``NAME-samples.jsonl``: the checkpoint of an unfinished profile."""

    @property
    def finished(self) -> tuple[Path, ...]:
        """What a finished profile may consist of (the checkpoint is not one of them), in
        the order :func:`edgespec.profiling.run.write_profiles` writes them."""
        return (
            self.target,
            self.target_zhu,
            self.target_zhu_printed,
            self.draft,
            self.draft_zhu,
            self.draft_zhu_printed,
            self.report,
        )


def profile_files(target: Path) -> ProfileFiles:
    """The files of the profile whose target file is ``target`` (``DIR/NAME.yaml`` →
    ``DIR/NAME-draft.yaml``, ``DIR/NAME.yml`` → ``DIR/NAME-draft.yml``, ...)."""

    def sibling(part: str, suffix: str) -> Path:
        return target.with_name(f"{target.stem}-{part}{suffix}")

    return ProfileFiles(
        target=target,
        target_zhu=sibling("zhu", target.suffix),
        target_zhu_printed=sibling("zhu-printed", target.suffix),
        draft=sibling("draft", target.suffix),
        draft_zhu=sibling("draft-zhu", target.suffix),
        draft_zhu_printed=sibling("draft-zhu-printed", target.suffix),
        report=sibling("report", ".json"),
        samples=sibling("samples", ".jsonl"),
    )
