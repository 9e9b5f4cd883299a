"""Rows as text (analytics/text.py): what the CLI prints and the service and web page download."""

from __future__ import annotations

import json

from tracewh.analytics.text import render


def test_table_right_aligns_numbers_and_draws_a_box():
    out = render(["model", "calls"], [("gpt-5.4", 12), ("claude", 3)], "table")
    assert out.splitlines() == [
        "┌─────────┬───────┐",
        "│ model   │ calls │",
        "├─────────┼───────┤",
        "│ gpt-5.4 │    12 │",
        "│ claude  │     3 │",
        "└─────────┴───────┘",
    ]


def test_table_keeps_columns_straight_with_wide_and_accented_text():
    out = render(["name", "n"], [("日本語", 1), ("e\u0301te", 22), (None, None)], "table").splitlines()
    bars = {tuple(i for i, c in enumerate(_columns(line)) if c == "│") for line in out[1:-1] if "│" in line}
    assert len(bars) == 1, out  # every │ at the same terminal column on every line
    assert out[5].startswith("│ null ")


def test_table_cuts_long_text_and_shows_newlines():
    out = render(["text"], [("line one\nline two " + "x" * 200,)], "table")
    assert "line one\\nline two" in out and "…" in out and max(len(line) for line in out.splitlines()) < 90


def test_markdown_csv_and_json():
    rows = [("a|b", 1.5, True)]
    assert render(["t", "x", "ok"], rows, "markdown").splitlines()[1] == "|---|---:|---|"
    assert render(["t", "x", "ok"], rows, "csv") == "t,x,ok\na|b,1.5,true\n"
    assert json.loads(render(["t", "x", "ok"], rows, "json")) == {"t": "a|b", "x": 1.5, "ok": True}


def _columns(line: str) -> list[str]:
    """The line as terminal cells: a wide character fills two, a combining mark none."""
    import unicodedata

    cells: list[str] = []
    for c in line:
        if unicodedata.combining(c):
            continue
        cells += [c, ""] if unicodedata.east_asian_width(c) in "WF" else [c]
    return cells
