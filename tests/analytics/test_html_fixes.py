"""What a real browser showed wrong in `report --html`: unlabelled token boxes, fractional count ticks, table rows
missing against the terminal table (its text size at 400 px is checked in tests/web/test_browser.py)."""

from __future__ import annotations

import re
from html import escape

from searchtrace.analytics._drawing import count_axis_end
from searchtrace.analytics._table import ROWS
from tests.analytics.test_html import EXTRA, REPORT, check, provider, render


def ticks(svg: str) -> list[str]:
    """The axis labels of a chart (centred texts on the bottom axis line)."""
    return re.findall(r'<text x="[^"]*" y="[^"]*" text-anchor="middle">([^<]*)</text>', svg)


def test_the_token_box_plots_have_visible_titles() -> None:
    page = render(REPORT, extra=EXTRA)
    visible = " ".join(check(page).text)  # text nodes, not aria-label attributes
    assert "input tokens per trajectory" in visible and "output tokens per trajectory" in visible


def test_count_axes_tick_whole_numbers() -> None:
    small = {**REPORT, "providers": {"a": provider({"SMART": 2, "MISSED": 1, "BLIND": 0, "NO-OP": 5}, 1 / 3)}}
    extra = {"gold_rank_hist": {"a": {1: 2}}, "per_trajectory": {"a": [
        {"fetches": 1, "input_tokens": 3, "output_tokens": 2}, {"fetches": 0, "input_tokens": 7, "output_tokens": 1}]}}
    svgs = re.findall(r"<svg.*?</svg>", render(small, extra=extra), re.S)
    contra, inputs, outputs = svgs[2], svgs[4], svgs[5]
    assert ticks(contra) == ["0", "1", "2", "3"]  # 3 supporting items: was 0, 0.6, 1.2, …
    assert ticks(inputs) == ["0", "2", "4", "6", "8"] and ticks(outputs) == ["0", "1", "2"]
    for v in (1, 3, 5, 7, 11, 18, 37, 99, 1234, 56_789):
        end, n = count_axis_end(v)
        assert end >= v and end == int(end) and (end / n) == int(end / n), (v, end, n)


def test_the_html_table_has_every_row_of_the_terminal_table() -> None:
    page = render(REPORT, extra=EXTRA)
    for row in ROWS:
        assert (f"<td>{escape(row.label)}</td>" in page) != row.usd, row.label  # USD rows need prices, as in the terminal
