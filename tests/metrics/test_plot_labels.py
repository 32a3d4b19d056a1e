"""The SLO attainment plot's words (edgespec.metrics.plots.plot_slo_attainment): each
class's bar and the overall share in the title are the summary's percentages, so a class
with one request of 3,000 late is 99.9%, not 100.0%."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from edgespec.metrics import plots
from edgespec.metrics.summary import summarize
from edgespec.metrics.types import SloClassStats
from tests.metrics.test_summary import BATCHES, REQUESTS


def test_the_attainment_plot_says_99_9_when_one_of_3000_missed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn: list[Any] = []
    monkeypatch.setattr(plots, "save_figure", lambda plt, fig, path: drawn.append(fig))
    gold = SloClassStats("gold", 6.0, 3000, 3000, 2999, 2999 / 3000)
    metrics = replace(
        summarize(REQUESTS, BATCHES, 4.0, 2), slo_attainment=2999 / 3000, slo_classes=(gold,)
    )
    plots.plot_slo_attainment(tmp_path / "slo.png", metrics)
    (axes,) = drawn[0].axes
    assert [text.get_text() for text in axes.texts] == ["99.9%\n(2999/3000)"]
    assert axes.get_title() == "SLO attainment per class (overall 99.9%)"
    plots.pyplot().close(drawn[0])


def test_the_tpot_cdf_leaves_out_one_token_requests_as_the_statistics_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REQUESTS' d has one output token: its TPOT 0 was plotted, so the CDF's median could
    read 0 ms where metrics.json's p50 (which leaves it out) did not."""
    drawn: list[Any] = []
    monkeypatch.setattr(plots, "save_figure", lambda plt, fig, path: drawn.append(fig))
    plots.plot_latency_cdfs(tmp_path / "cdf.png", REQUESTS)
    tpot_axes = drawn[0].axes[1]
    (line,) = [ln for ln in tpot_axes.get_lines() if ln.get_label() == "all"]
    metrics = summarize(REQUESTS, BATCHES, 4.0, 2)
    assert metrics.tpot is not None and len(line.get_xdata()) == metrics.tpot.count == 3
    assert min(line.get_xdata()) > 0
    plots.pyplot().close(drawn[0])
