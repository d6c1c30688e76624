"""Numbered notes under a Markdown table, so that every cell stays short.

CLAIMS.md reads one table per screen: a cell longer than `MAX_CELL` characters (a long
reason, a command to record a reply) keeps its first words and a note number, and the
whole text becomes a numbered note right under the table.
"""

from __future__ import annotations

import math

MAX_CELL = 160
"""The longest table cell CLAIMS.md writes (tests/test_report_claims.py checks it)."""
HEAD_CHARS = 60


class Notes:
    """The numbered notes of one table, in the order its cells ask for them."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def add(self, text: str) -> int:
        """The note's number; the same text twice gets one note."""
        if text not in self.texts:
            self.texts.append(text)
        return self.texts.index(text) + 1

    def cell(self, text: str) -> str:
        """`text` itself when short, else its head and a note number (the text as the note)."""
        if len(text) <= MAX_CELL:
            return text
        if ":" in text[:HEAD_CHARS]:
            head = text.split(":", 1)[0]
        else:  # its leading whole words, then an ellipsis
            head = text[:HEAD_CHARS].rsplit(" ", 1)[0] + " ..."
        return f"{head} (note {self.add(text)})"

    def lines(self) -> list[str]:
        """A blank line and the numbered notes; nothing without notes."""
        if not self.texts:
            return []
        return ["", *(f"{i}. {text}" for i, text in enumerate(self.texts, 1))]


def number(value: float, fmt: str) -> str:
    """A table cell for `value`: "-" for NaN (not testable), else `value` in `fmt`."""
    return "-" if math.isnan(value) else format(value, fmt)
