"""Import gym without its deprecation notice.

crafter and procgen import gym 0.26, whose import prints a four-line "Gym has been
unmaintained" notice to stderr (a print, not a warning: warning filters cannot stop
it). Every process that imports crafter or procgen printed it: 7 times a run with its
vec-env workers. Neither package uses gym beyond its spaces and base class, and this
project pins its versions, so the notice says nothing a user can act on. Anything else
gym prints while importing passes through.
"""

from __future__ import annotations

import contextlib
import io
import sys

NOTICE_START = "Gym has been unmaintained"


def import_gym_quietly() -> None:
    """Import gym (if installed and not yet imported) with its notice dropped."""
    if "gym" in sys.modules:
        return
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured):
            # lazy: optional dependency (gym), imported here with its notice dropped
            import gym  # noqa: F401
    except ImportError:
        pass  # crafter works without gym; procgen reports its own missing dependency
    text = captured.getvalue()
    if text and not text.startswith(NOTICE_START):
        sys.stderr.write(text)
