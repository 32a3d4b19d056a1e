"""What a calibration stopped part way leaves in its folder, and how to go on from there
(:mod:`edgespec.calibration.command`): a drafter process that failed in the real run, or
Ctrl-C / SIGTERM at any step.

What its folder holds follows from the step it was at: nothing while loading; while
profiling, the partial profile (:data:`~edgespec.calibration.folder.PARTIAL`: each
configuration measured so far, which a rerun with ``--resume`` goes on with; removed when
it holds none); then the fresh profile (which a rerun may read with ``--profile``); then the
real run's ``trace.jsonl`` too; the comparison last."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from edgespec.calibration.folder import PARTIAL

LOADING, PROFILING, RUNNING, SIMULATING = "loading", "profiling", "running", "simulating"
"""A calibration's steps, in order: loading the pair and prompts (its folder not made yet),
profiling the pair (the folder made, no profile written), the link and real run (the fresh
profile written), the simulated run and comparison (``trace.jsonl`` written too)."""


@dataclass(slots=True)
class CalibrationSteps:
    """The step a calibration writing to ``out`` is at (``profiled``: it profiles the pair
    itself, no ``--profile`` given); advanced by the command as it goes."""

    out: Path
    profiled: bool
    step: str = LOADING
    made_out: bool = False
    """Whether this run made ``out`` (it did not exist): an empty one is removed at a stop."""
    removed_out: bool = False

    def remove_unused_out(self) -> None:
        """At a stop: remove a partial profile that holds no configuration, then ``out`` if
        this run made it and nothing was written to it (a stop while profiling), so no
        empty ``runs/calibration-<time>`` stays behind."""
        from edgespec.profiling.checkpoint import num_measured

        partial = self.out / PARTIAL
        if self.step == PROFILING and partial.is_file() and not num_measured(partial):
            partial.unlink()
        if self.made_out and self.out.is_dir() and not any(self.out.iterdir()):
            self.out.rmdir()
            self.removed_out = True

    def left_behind(self) -> str:
        """What a calibration stopped in its real run leaves in ``out``: no trace.jsonl
        nor comparison.md; a fresh profile, which a rerun may read (``--profile``)."""
        done = "the calibration stopped before its trace and comparison"
        if not self.profiled:
            return f"{done}: {self.out} holds neither"
        return f"{done}: {self.out} holds only this run's profile ({self._reuse('it')})"

    def stopped_line(self, said: str) -> str:
        """The line said before ``edgespec calibrate: interrupted`` (``said``:
        ``interrupted`` or ``terminated``): the step it stopped at, what ``out`` holds of
        this run, and how to go on."""
        return f"{said} {self._when()}: {self._kept()}"

    def _when(self) -> str:
        done = "profiling the pair" if self.profiled else "reading --profile"
        return {
            LOADING: "while loading the pair and its prompts, before it wrote anything",
            PROFILING: "while profiling the pair",
            RUNNING: f"after {done}, before its trace and comparison",
            SIMULATING: "after its real run, before its comparison",
        }[self.step]

    def _kept(self) -> str:
        again, out = "run the same command to start again", self.out
        if self.step == LOADING:
            return again
        if self.step == PROFILING:
            from edgespec.profiling.checkpoint import num_measured

            measured = num_measured(out / PARTIAL)
            if measured:
                return (f"{out} keeps the {measured} configurations measured so far "
                        f"({PARTIAL}); rerun with --out {out} --resume to go on")  # fmt: skip
            nothing = "(nothing was measured yet)"
            if self.removed_out:
                return f"nothing of this run is kept {nothing}, {out} removed; {again}"
            return f"{out} holds nothing of this run {nothing}; {again}"
        if self.step == RUNNING:
            if self.profiled:
                return f"{out} holds only this run's profile ({self._reuse('it')})"
            return f"{out} holds nothing of this run; {again}"
        if self.profiled:
            return f"{out} holds this run's profile and trace.jsonl ({self._reuse('the profile')})"
        return (
            f"{out} holds this run's trace.jsonl; run the same command with --out {out} "
            "--overwrite to start again"
        )

    def _reuse(self, what: str) -> str:
        profile = self.out / "profile.yaml"
        return f"rerun with --profile {profile} --out {self.out} --overwrite to reuse {what}"
