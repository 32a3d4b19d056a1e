"""WISV's Stage-1 dataset on disk: the mismatch rows of :mod:`edgespec.learn.wisv.capture`
(hidden states float16) and per-prompt bookkeeping, one ``.npz`` file."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from edgespec.learn.wisv.dataset_checks import (
    MISMATCH_KEYS,
    PROMPT_KEYS,
    ROLLOUT_KEYS,
    check_arrays,
    read_arrays,
)
from edgespec.output_paths import write_atomically
from edgespec.policies.semantic.relabel import Episode

if TYPE_CHECKING:
    from edgespec.learn.wisv.capture import PromptCapture

"""Mismatch keys of a rollout capture only (:mod:`edgespec.learn.wisv.rollout`)."""


@dataclass(frozen=True, slots=True, eq=False)
class WisvDataset:
    """Mismatch rows (hidden states as float16 on disk) and per-prompt bookkeeping.

    Every mismatch key (:data:`MISMATCH_KEYS`) is an array of one entry per mismatch in
    prompt then output order; ``prompts`` lists the captured prompt indices (line numbers
    of the dataset's train file; for ShareGPT, the order of its train prompts) with
    :data:`PROMPT_KEYS`' other arrays aligned to it. Answers are strings, ``""`` for no
    number (and for every row of a similarity-labelled dataset). ``similarity`` holds each
    mismatch's ROUGE-L F1 when the labels come from
    :class:`~edgespec.learn.wisv.similarity.ContinuationSimilarity`; it is ``None`` (and
    not in the file) for answer labels. A rollout capture's rows also hold
    :data:`ROLLOUT_KEYS` (in ``rows``; absent from a lossless capture's file)."""

    draft_hidden: npt.NDArray[np.float16]
    target_hidden: npt.NDArray[np.float16]
    rows: dict[str, npt.NDArray[Any]]
    prompts: dict[str, npt.NDArray[Any]]
    continuation_answer: npt.NDArray[np.str_]
    reference_answer: npt.NDArray[np.str_]
    meta: dict[str, Any]
    similarity: npt.NDArray[np.float64] | None = None

    def __len__(self) -> int:
        return int(self.rows["critical"].shape[0])

    @staticmethod
    def from_captures(captures: Sequence[PromptCapture], meta: dict[str, Any]) -> WisvDataset:
        def cat(values: Callable[[PromptCapture], Sequence[Any]], dtype: Any) -> Any:
            return np.asarray([v for c in captures for v in values(c)], dtype=dtype)

        width_d = captures[0].draft_hidden.shape[1] if captures else 0
        width_t = captures[0].target_hidden.shape[1] if captures else 0
        rows: dict[str, npt.NDArray[Any]] = {
            "prompt_index": cat(lambda c: [c.prompt_index] * len(c.mismatches), np.int32),
            "position": cat(lambda c: [m.position for m in c.mismatches], np.int32),
            "round": cat(lambda c: [m.round for m in c.mismatches], np.int32),
            "offset": cat(lambda c: [m.offset for m in c.mismatches], np.int32),
            "draft_id": cat(lambda c: c.draft_ids, np.int64),
            "target_id": cat(lambda c: c.target_ids, np.int64),
            "critical": cat(lambda c: c.critical, np.int8),
        }
        prompts: dict[str, npt.NDArray[Any]] = {
            "prompts": np.asarray([c.prompt_index for c in captures], dtype=np.int32),
            "prompt_tokens": np.asarray([c.prompt_tokens for c in captures], dtype=np.int32),
            "output_tokens": np.asarray([len(c.output) for c in captures], dtype=np.int32),
            "num_rounds": np.asarray([c.num_rounds for c in captures], dtype=np.int32),
            "agreement": np.asarray([c.agreement for c in captures], dtype=np.float64),
        }
        rolled = {c.accepted is not None for c in captures}
        if len(rolled) > 1:
            raise ValueError("captures mix rollout and lossless captures")
        if rolled == {True}:
            rows["accepted"] = cat(lambda c: c.accepted or (), np.int8)
            rows["off_reference"] = cat(lambda c: c.off_reference or (), np.int8)
            rows["local_critical"] = cat(lambda c: c.local_critical or (), np.int8)
        similar = {c.similarity is not None for c in captures}
        if len(similar) > 1:
            raise ValueError("captures mix answer labels and similarity labels")
        similarity = cat(lambda c: c.similarity or (), np.float64) if similar == {True} else None
        hd = [c.draft_hidden for c in captures if len(c.mismatches)]
        ht = [c.target_hidden for c in captures if len(c.mismatches)]
        return WisvDataset(
            draft_hidden=(np.concatenate(hd) if hd else np.zeros((0, width_d))).astype(np.float16),
            target_hidden=(np.concatenate(ht) if ht else np.zeros((0, width_t))).astype(np.float16),
            rows=rows,
            prompts=prompts,
            continuation_answer=np.asarray(
                [a or "" for c in captures for a in c.continuation_answers], dtype=np.str_
            ).reshape(-1),
            reference_answer=np.asarray([c.answer or "" for c in captures], dtype=np.str_),
            meta=meta,
            similarity=similarity,
        )

    def save(self, path: Path) -> None:
        """The dataset as one ``.npz`` at ``path``, written atomically (a stopped save
        leaves no partial file there)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, Any] = {
            "draft_hidden": self.draft_hidden,
            "target_hidden": self.target_hidden,
            "continuation_answer": self.continuation_answer,
            "reference_answer": self.reference_answer,
            "meta": np.asarray(json.dumps(self.meta)),
            **self.rows,
            **self.prompts,
        }
        if self.similarity is not None:
            arrays["similarity"] = self.similarity
        write_atomically(path, lambda fh: np.savez_compressed(fh, **arrays))

    @staticmethod
    def load(path: Path) -> WisvDataset:
        """The dataset saved at ``path``; a file that is not a whole wisv-data file (not
        an ``.npz`` archive, an array missing, arrays whose shapes disagree) is a
        :class:`ValueError` naming the file and the problem
        (:mod:`edgespec.learn.wisv.dataset_checks`)."""
        arrays = read_arrays(path)
        check_arrays(path, arrays)
        try:
            meta = json.loads(str(arrays["meta"]))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: meta is not JSON ({exc})") from exc
        if not isinstance(meta, dict):
            raise ValueError(f"{path}: meta is a JSON {type(meta).__name__}, not an object")
        return WisvDataset(
            draft_hidden=arrays["draft_hidden"],
            target_hidden=arrays["target_hidden"],
            rows={k: arrays[k] for k in (*MISMATCH_KEYS, *ROLLOUT_KEYS) if k in arrays},
            prompts={k: arrays[k] for k in PROMPT_KEYS},
            continuation_answer=arrays["continuation_answer"],
            reference_answer=arrays["reference_answer"],
            meta=meta,
            similarity=arrays.get("similarity"),
        )

    @staticmethod
    def concat(parts: Sequence[WisvDataset], meta: dict[str, Any]) -> WisvDataset:
        """The rows and prompts of ``parts`` in order, with ``meta``. ``similarity`` and
        the rollout keys are kept when every part has them. The parts' prompt indices
        are kept as they are (:mod:`edgespec.learn.wisv.union` renumbers)."""
        if not parts:
            raise ValueError("no datasets to join")
        widths = {(p.draft_hidden.shape[1], p.target_hidden.shape[1]) for p in parts}
        if len(widths) > 1:
            raise ValueError(f"hidden sizes differ between the datasets: {sorted(widths)}")
        keys = [k for k in (*MISMATCH_KEYS, *ROLLOUT_KEYS) if all(k in p.rows for p in parts)]
        similarity = [p.similarity for p in parts if p.similarity is not None]
        return WisvDataset(
            draft_hidden=np.concatenate([p.draft_hidden for p in parts]),
            target_hidden=np.concatenate([p.target_hidden for p in parts]),
            rows={k: np.concatenate([p.rows[k] for p in parts]) for k in keys},
            prompts={k: np.concatenate([p.prompts[k] for p in parts]) for k in PROMPT_KEYS},
            continuation_answer=np.concatenate([p.continuation_answer for p in parts]),
            reference_answer=np.concatenate([p.reference_answer for p in parts]),
            meta=meta,
            similarity=np.concatenate(similarity) if len(similarity) == len(parts) else None,
        )

    def episodes(self) -> list[tuple[int, npt.NDArray[np.int64], Episode]]:
        """(prompt index, row indices, :class:`Episode`) for every prompt with mismatches,
        in prompt order."""
        found = []
        prompt = self.rows["prompt_index"]
        for p in self.prompts["prompts"]:
            idx = np.flatnonzero(prompt == p).astype(np.int64)
            if idx.size:
                positions = tuple(int(x) for x in self.rows["position"][idx])
                critical = tuple(int(x) for x in self.rows["critical"][idx])
                found.append((int(p), idx, Episode(positions, critical)))
        return found

    def summary(self) -> dict[str, Any]:
        """Counts for the JSON summary: prompts, mismatches, class balance, agreement; the
        answers found (answer labels) or the ROUGE-L F1's mean, median and histogram in
        ten bins of width 0.1, 1.0 in the last (similarity labels)."""
        critical = int(self.rows["critical"].sum())
        total = len(self)
        outputs = self.prompts["output_tokens"]
        with_critical = len(set(self.rows["prompt_index"][self.rows["critical"] == 1].tolist()))
        found: dict[str, Any] = {
            "prompts": int(self.prompts["prompts"].size),
            "mismatches": total,
            "critical": critical,
            "non_critical": total - critical,
            "critical_share": round(critical / total, 4) if total else 0.0,
            "prompts_with_mismatches": len(set(self.rows["prompt_index"].tolist())),
            "prompts_with_critical": with_critical,
            "mismatches_per_prompt": round(total / max(1, outputs.size), 3),
            "output_tokens": int(outputs.sum()),
            "mean_output_tokens": round(float(outputs.mean()), 2) if outputs.size else 0.0,
            "rounds": int(self.prompts["num_rounds"].sum()),
            "agreement": round(float(np.average(self.prompts["agreement"], weights=outputs)), 4)
            if outputs.size and outputs.sum()
            else 0.0,
            "answers_found": int((self.reference_answer != "").sum()),
            "draft_hidden": int(self.draft_hidden.shape[1]),
            "target_hidden": int(self.target_hidden.shape[1]),
        }
        if "accepted" in self.rows:
            accepted, off = self.rows["accepted"] == 1, self.rows["off_reference"] == 1
            found["accepted"] = int(accepted.sum())
            found["off_reference"] = int(off.sum())
            found["off_reference_critical"] = int(self.rows["critical"][off].sum())
            found["local_critical"] = int(self.rows["local_critical"].sum())
            found["off_reference_local_critical"] = int(self.rows["local_critical"][off].sum())
        if self.similarity is not None:
            del found["answers_found"]
            f1 = self.similarity
            found["similarity_mean"] = round(float(f1.mean()), 4) if f1.size else 0.0
            found["similarity_median"] = round(float(np.median(f1)), 4) if f1.size else 0.0
            bins = np.minimum(np.floor(f1 * 10 + 1e-9).astype(np.int64), 9)
            found["similarity_histogram"] = np.bincount(bins, minlength=10).tolist()
        return found
