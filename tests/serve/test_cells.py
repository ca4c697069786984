"""Issue 22 item 11: bidi controls and stacked combining marks in a title cannot spoof the
``host catalog`` table (schedlog.cli._cells)."""

from __future__ import annotations

import unicodedata

from schedlog.cli._cells import MAX_CELL, cell


def test_bidi_controls_are_shown_as_escapes() -> None:
    spoof = "invoice\u202egpj.exe\u2066x\u2069\u200f"
    shown = cell(spoof)
    assert shown == "invoice\\u202egpj.exe\\u2066x\\u2069\\u200f"
    assert not any(unicodedata.bidirectional(c) in ("RLO", "LRI", "PDI", "R") for c in shown)


def test_stacked_combining_marks_are_cut_to_two_per_character() -> None:
    zalgo = "a" + "\u0301" * 50 + "b" + "\u0300\u0301"
    assert cell(zalgo) == "a\u0301\u0301b\u0300\u0301"


def test_a_long_cell_is_clipped_and_plain_text_kept() -> None:
    assert len(cell("x" * 1000)) == MAX_CELL
    assert cell("x" * 1000).endswith("…")
    assert cell('Standup <&"> \ud800') == 'Standup <&"> \ud800'
    assert cell("") == ""
