"""The terminal's view of metrics (edgespec.metrics.summary: print_summary, print_runs):
plain numbers (no exponent, thousands grouped), table headers whole at 80 columns, the
SLO classes by target token speed; and what the summary printed before, unchanged."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest
from rich.console import Console

from edgespec.metrics.formatting import percent
from edgespec.metrics.summary import (
    fit_headers,
    fixed,
    plain,
    print_runs,
    print_summary,
    setting,
    summarize,
)
from edgespec.metrics.types import SloClassStats, SystemMetrics
from tests.metrics.test_summary import BATCHES, REQUESTS

METRICS = summarize(REQUESTS, BATCHES, duration_s=4.0, num_servers=2)
RUN_NAMES = ["goodput tok/s", "TPOT p50 ms", "acceptance", "SLO violation", "server util"]


def _text(width: int, show: Any, shown: Any, title: str | None = None) -> str:
    console = Console(record=True, width=width)
    show(shown, console, *(() if title is None else (title,)))
    return console.export_text()


# --- as before (tests/metrics/test_sinks.py's checks of the same tables)


def test_print_summary_table() -> None:
    text = _text(120, print_summary, METRICS)
    assert "TTFT   687.5   750.0  1000.0  1000.0" in text
    assert "SLO attainment               66.7%" in text
    assert "  c2 ≥2 tok/s                100.0% (1/1)" in text
    assert "  c8 ≥8 tok/s                50.0% (1/2)" in text
    assert "goodput                      5.5 tok/s" in text
    assert "25.0% mean over 2" in text


def test_print_summary_shows_the_service_ttft_only_when_requests_waited() -> None:
    waited = [replace(REQUESTS[0], device_wait_s=0.5), *REQUESTS[1:]]
    metrics = summarize(waited, BATCHES, duration_s=4.0, num_servers=2)
    assert metrics.ttft is not None and metrics.service_ttft is not None
    assert metrics.ttft.mean_s - metrics.service_ttft.mean_s == pytest.approx(0.5 / 4)
    text = _text(120, print_summary, metrics)
    assert "TTFT from start   562.5" in text
    assert "TTFT              687.5   750.0  1000.0  1000.0" in text
    assert "from start" not in _text(120, print_summary, METRICS)


def _table(text: str, title: str = "") -> list[list[str]]:
    """The cells of the table after ``title`` (the first without), one header row: a
    header's lines joined, after a dot directly, else with a space."""
    lines = text[text.index(title) :].replace("┃", "│").splitlines()
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in lines if "│" in line]
    rule = next(i for i, line in enumerate(lines) if line.startswith(("┡", "╇")))
    head = sum(1 for line in lines[:rule] if "│" in line)
    header = ["" for _ in rows[0]]
    for row in rows[:head]:
        for i, piece in enumerate(row):
            if piece:
                joiner = "" if not header[i] or header[i].endswith(".") else " "
                header[i] += joiner + piece
    body = rows[head:]
    end = next((i for i, r in enumerate(body) if len(r) != len(header)), len(body))
    return [header, *body[:end]]


def test_print_runs_one_row_per_run() -> None:
    rows = [({"policies.window.params.gamma": g}, summarize([], [], 10.0, 1)) for g in (2, 4)]
    text = _text(200, print_runs, rows, "sweep")
    assert "params.gamma" in text
    assert [row[0] for row in _table(text, "sweep")[1:]] == ["2", "4"]


def test_print_runs_shows_each_slo_class_attainment() -> None:
    rows = [({"n": 1}, METRICS), ({"n": 2}, summarize([], [], 4.0, 1))]
    text = _text(200, print_runs, rows)
    table = _table(text, "SLO attainment per class")
    assert table == [["n", "c2", "c8"], ["1", "100.0%", "50.0%"], ["2", "-", "-"]]
    text = _text(200, print_runs, [({"n": 2}, summarize([], [], 4.0, 1))])
    assert "SLO attainment per class" not in text  # no class, no table


# --- plain numbers


@pytest.mark.parametrize(
    ("value", "digits", "shown"),
    [
        (10634.2, 4, "10,634"),
        (10630.0, 4, "10,630"),
        (1234.5, 4, "1234"),
        (5.5, 4, "5.5"),
        (1.0, 3, "1"),
        (0.0123456, 3, "0.0123"),
        (0.00001, 3, "0.00001"),
        (1e20, 3, "100,000,000,000,000,000,000"),
        (99999.9, 3, "100,000"),
        (0.0, 3, "0"),
        (-0.0001, 3, "-0.0001"),
        (1_000_000, 3, "1,000,000"),
        (4480, 3, "4480"),
        (None, 3, "-"),
        (float("nan"), 3, "-"),
        (float("inf"), 3, "-"),
    ],
)
def test_plain_numbers_have_no_exponent(value: float | None, digits: int, shown: str) -> None:
    assert plain(value, digits) == shown


def test_fixed_and_settings_are_plain_too() -> None:
    assert fixed(12345.678, 1) == "12,345.7"
    assert fixed(1000.0, 1) == "1000.0"
    assert fixed(-0.01, 1) == "0.0"
    values = (1e-05, 2.5e10, 100000, 0.1, True, False, None, "fcfs", "1", [1, 2], {"k": None})
    assert [setting(v) for v in values] == [
        "0.00001",
        "25,000,000,000.0",
        "100,000",
        "0.1",
        "true",
        "false",
        "null",
        "fcfs",
        "'1'",
        "[1, 2]",
        "{k: null}",
    ]


def _big(m: SystemMetrics) -> SystemMetrics:
    return replace(
        m,
        goodput_tokens_per_s=10634.2,
        throughput_tokens_per_s=123456.7,
        throughput_requests_per_s=1.5e-05,
        num_wasted_draft_tokens=1234567,
        num_batches=250000,
    )


def test_the_summary_prints_plain_numbers() -> None:
    text = " ".join(_text(120, print_summary, _big(METRICS)).split())
    assert "goodput 10,634 tok/s" in text
    assert "server tokens 123,457 tok/s" in text
    assert "throughput 0.000015 req/s" in text
    assert "wasted draft tokens 1,234,567" in text
    assert "250,000 batches" in text
    assert not re.search(r"\de[+-]\d", text)


def test_the_run_tables_print_plain_numbers() -> None:
    rows = [({"links.wan.loss_rate": 1e-05, "n": 100000}, _big(METRICS))]
    table = _table(_text(120, print_runs, rows, "sweep"), "sweep")
    assert table[1][:3] == ["0.00001", "100,000", "10,634"]
    assert not re.search(r"\de[+-]\d", " ".join(table[1]))


# --- headers whole at 80 columns


def test_sweep_headers_are_whole_at_80_columns() -> None:
    """README's sweep (two keys) and capacity search (one key): every header whole, no
    ellipsis, no line wider than the terminal."""
    keys = ["policies.window.params.gamma", "links.default.rtt_ms"]
    rows = [({keys[0]: g, keys[1]: r}, METRICS) for g in (2, 4, 6) for r in (10, 50)]
    text = _text(80, print_runs, rows, "sweep")
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    assert _table(text, "sweep")[0] == [*keys, *RUN_NAMES]
    assert _table(text, "SLO attainment per class")[0] == [*keys, "c2", "c8"]
    key = "auto_topology.devices.0.count"
    text = _text(80, print_runs, [({key: n}, METRICS) for n in (50, 1025, 2000)], "probes")
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80
    assert _table(text, "probes")[0] == [key, *RUN_NAMES]


def test_headers_stay_on_one_line_when_they_fit() -> None:
    text = _text(200, print_runs, [({"policies.window.params.gamma": 2}, METRICS)], "sweep")
    assert "policies.window.params.gamma" in text and "goodput tok/s" in text


def test_fit_headers_breaks_at_spaces_and_after_dots_only() -> None:
    """The header whose wrapping saves the most goes first; a dotted key keeps its pieces."""
    headers = ["auto_topology.devices.0.count", "goodput tok/s"]
    body = [["2000", "10,634"]]
    assert fit_headers(headers, body, 42) == headers
    assert fit_headers(headers, body, 36) == ["auto_topology.devices.0.count", "goodput\ntok/s"]
    assert fit_headers(headers, body, 30) == ["auto_topology.devices.\n0.count", "goodput\ntok/s"]
    narrowest = ["auto_topology.\ndevices.0.\ncount", "goodput\ntok/s"]
    assert fit_headers(headers, body, 20) == narrowest
    assert fit_headers(headers, body, 1) == narrowest  # cannot fit: whole pieces, no less


# --- SLO classes by target


def _classes(m: SystemMetrics, targets: dict[str, float | None]) -> SystemMetrics:
    stats = tuple(SloClassStats(c, t, 2, 2, 1, 0.5) for c, t in sorted(targets.items()))
    return replace(m, slo_classes=stats)


def test_the_class_table_orders_classes_by_target_token_speed() -> None:
    """Not by name: bronze (2 tok/s), silver (4), gold (6), platinum (8)."""
    targets: dict[str, float | None] = {"gold": 6.0, "bronze": 2.0, "platinum": 8.0}
    rows = [
        ({"n": 1}, _classes(METRICS, {**targets, "silver": 4.0, "best": None})),
        ({"n": 2}, _classes(METRICS, targets)),
    ]
    table = _table(_text(120, print_runs, rows), "SLO attainment per class")
    assert table[0] == ["n", "bronze", "silver", "gold", "platinum"]
    assert table[2] == ["2", "50.0%", "-", "50.0%", "50.0%"]


# --- shares short of all (or of none)


@pytest.mark.parametrize(
    ("share", "shown"),
    [
        (2999 / 3000, "99.9%"),  # 100.0% before (bench-cells: 25,803 of 25,806 met)
        (971 / 972, "99.9%"),
        (0.99949, "99.9%"),
        (0.9995, "99.9%"),
        (1.0, "100.0%"),
        (0.9994, "99.9%"),
        (0.5, "50.0%"),
        (1 / 10_000, "0.1%"),  # one violation in 10,000: 0.0% before
        (0.0, "0.0%"),
        (None, "-"),
        (float("nan"), "-"),
    ],
)
def test_a_share_short_of_all_never_shows_as_100_percent(share: float | None, shown: str) -> None:
    assert percent(share) == shown


def test_the_summary_and_the_runs_table_say_99_9_when_one_of_3000_missed() -> None:
    gold = SloClassStats("gold", 6.0, 3000, 3000, 2999, 2999 / 3000)
    metrics = replace(METRICS, slo_attainment=2999 / 3000, slo_classes=(gold,))
    text = _text(120, print_summary, metrics)
    assert "SLO attainment               99.9%" in text
    assert "  gold ≥6 tok/s              99.9% (2999/3000)" in text
    table = _table(_text(200, print_runs, [({"n": 1}, metrics)]), "SLO attainment per class")
    assert table == [["n", "gold"], ["1", "99.9%"]]
