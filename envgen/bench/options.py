"""Command-line options that several `envgen bench` targets share."""

from __future__ import annotations

import argparse

from envgen.agents.config import MODEL_PRESETS
from envgen.input_checks import whole_number


def add_count(
    parser: argparse.ArgumentParser, flag: str, default: int, help: str, least: int = 1
) -> None:
    """A whole-number option of at least `least`; its help ends with its default."""
    parser.add_argument(
        flag, type=whole_number(least), default=default, help=f"{help} (default %(default)s)"
    )


def add_model(parser: argparse.ArgumentParser, why: str = "") -> None:
    """`--model`, a network preset, default nature (`why`: a note on the default)."""
    parser.add_argument(
        "--model",
        default="nature",
        choices=sorted(MODEL_PRESETS),
        help=f"network preset (default nature{why})",
    )
