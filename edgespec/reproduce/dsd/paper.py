"""DSD's printed numbers that the claims and the fitted load read (SEED-NOTES §4.2): Fig. 5's
stacks and Table 2, with Table 2's configurations, and the tolerances SEED-NOTES' checklist
sets around them."""

from __future__ import annotations

ABSOLUTE = 0.5
"""An absolute value within ±50% of the paper's (SEED-NOTES §5: DSD's key inputs are
missing)."""
RELATIVE = 0.25
"""A relative change within ±25% of the paper's (SEED-NOTES §5)."""

TABLE_CONFIGS: dict[str, tuple[int, float]] = {
    "C1": (600, 10.0),
    "C2": (1000, 10.0),
    "C3": (600, 30.0),
    "C4": (1000, 30.0),
}
"""Table 2's configurations: (drafts, RTT ms), all with 20 targets."""
PAPER_STACKS = {"default": (25.1, 351.0, 45.0), "s4": (28.1, 345.0, 37.0)}
"""Fig. 5, GSM8K: (throughput req/s, TTFT ms, TPOT ms)."""
_TABLE2_ROWS: tuple[
    tuple[str, str, tuple[float, ...], tuple[float, ...], tuple[float, ...]], ...
] = (
    ("gsm8k", "C1", (25.8, 26.1, 28.3), (352, 334, 347), (40.1, 38.9, 36.2)),
    ("gsm8k", "C2", (30.6, 30.7, 31.5), (368, 354, 362), (72.2, 69.7, 67.4)),
    ("gsm8k", "C3", (17.8, 18.9, 18.5), (462, 457, 443), (62.3, 62.9, 58.3)),
    ("gsm8k", "C4", (21.4, 21.8, 22.3), (478, 465, 463), (99.4, 98.1, 91.5)),
    ("humaneval", "C1", (16.2, 16.7, 17.2), (803, 792, 799), (50.8, 48.6, 46.3)),
    ("humaneval", "C2", (17.4, 17.6, 18.2), (2102, 2178, 2038), (75.4, 73.4, 70.5)),
    ("humaneval", "C3", (11.2, 11.0, 11.3), (1138, 1125, 1120), (79.2, 78.1, 73.6)),
    ("humaneval", "C4", (12.8, 13.1, 13.2), (2578, 2520, 2497), (102.7, 100.2, 96.8)),
    ("cnndm", "C1", (8.0, 8.25, 8.4), (1602, 1625, 1569), (67.4, 66.9, 62.8)),
    ("cnndm", "C2", (12.1, 12.2, 12.6), (2412, 2408, 2352), (82.1, 82.6, 76.8)),
    ("cnndm", "C3", (6.0, 6.2, 6.2), (2024, 1993, 2006), (92.4, 88.6, 86.7)),
    ("cnndm", "C4", (9.3, 9.5, 9.7), (2986, 2934, 2925), (108.3, 108.5, 98.2)),
)
"""Table 2 as printed: (dataset, configuration, throughput req/s, TTFT ms, TPOT ms), each
(Static, Dynamic, AWC)."""
PAPER_TABLE2: dict[tuple[str, str], dict[str, tuple[float, ...]]] = {
    (d, c): {"thr": thr, "ttft": ttft, "tpot": tpot} for d, c, thr, ttft, tpot in _TABLE2_ROWS
}
"""(dataset, configuration) → metric → (Static, Dynamic, AWC)."""
PRINTED_TPOT_PCT: dict[tuple[str, str], float] = {
    ("gsm8k", "C1"): -10.7, ("gsm8k", "C2"): -7.1, ("gsm8k", "C3"): -8.8, ("gsm8k", "C4"): -8.6,
    ("humaneval", "C1"): -9.7, ("humaneval", "C2"): -6.9, ("humaneval", "C3"): -7.0,
    ("humaneval", "C4"): -6.0, ("cnndm", "C1"): -6.8, ("cnndm", "C2"): -6.5,
    ("cnndm", "C3"): -6.2, ("cnndm", "C4"): -10.2,
}  # fmt: skip
"""Table 2's printed AWC TPOT change over Static (%), which its absolute values contradict in
8 of the 12 cells (SEED-NOTES §4.4 item 3)."""
