"""Hypothesis draws of the draft blocks the lossless property tests verify (the
transformers and llama.cpp backends alike): a chain right, wrong, first wrong or random, or
a token tree whose nodes are right or wrong at their depth."""

from __future__ import annotations

from hypothesis import strategies as st

Draft = tuple[tuple[int, ...], tuple[int, ...] | None]
"""(draft tokens, tree parents or ``None`` for a chain)."""


def wrong_token(right: int, shift: int, vocab: int) -> int:
    """A token of ``vocab`` other than ``right``."""
    return (right + 1 + shift % (vocab - 1)) % vocab


def draw_draft(
    data: st.DataObject,
    label: str,
    right_tail: tuple[int, ...],
    vocab: int,
    max_gamma: int,
    lowest_random_id: int = 0,
) -> Draft:
    """A draft for a session whose next target tokens are ``right_tail``; random tokens are
    drawn from ``lowest_random_id ..`` (a vocabulary's special tokens left out)."""
    kind = data.draw(st.sampled_from(["right", "wrong", "first wrong", "random", "tree"]), label)
    if kind == "tree":
        size = data.draw(st.integers(1, max_gamma + 2), label=f"{label} nodes")
        parents: list[int] = []
        depths: list[int] = []
        tokens: list[int] = []
        for node in range(size):
            parent = data.draw(st.integers(-1, node - 1), label=f"{label} parent {node}")
            depth = 1 if parent < 0 else depths[parent] + 1
            right_id = right_tail[depth - 1]
            shift = data.draw(st.integers(0, vocab), label=f"{label} token {node}")
            parents.append(parent)
            depths.append(depth)
            tokens.append(right_id if shift % 2 == 0 else wrong_token(right_id, shift, vocab))
        return tuple(tokens), tuple(parents)
    k = data.draw(st.integers(1, max_gamma), label=f"{label} length")
    right = right_tail[:k]
    if kind == "right":
        return right, None
    shifts = data.draw(st.lists(st.integers(0, vocab), min_size=k, max_size=k), f"{label} ids")
    if kind == "wrong":
        return tuple(wrong_token(r, s, vocab) for r, s in zip(right, shifts, strict=True)), None
    if kind == "first wrong":
        return (wrong_token(right[0], shifts[0], vocab), *right[1:]), None
    span = vocab - lowest_random_id
    return tuple(lowest_random_id + s % span for s in shifts), None
