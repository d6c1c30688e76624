"""EnvGen replication: LLM-designed training environments for Crafter and Heist.

Importing the package imports gym first, without its notice: crafter and procgen import
gym 0.26, which prints a four-line "Gym has been unmaintained" notice to stderr (a print:
warning filters cannot stop it) in every process, vec-env workers included. Neither uses
gym beyond its spaces and base class, and the versions are pinned, so the notice says
nothing a user can act on; anything else gym prints passes through.
"""

import contextlib
import io
import sys

__version__ = "0.1.0"


def _import_gym_quietly() -> None:
    """Import gym (if installed: crafter works without it) with its notice dropped."""
    captured = io.StringIO()
    with contextlib.redirect_stderr(captured), contextlib.suppress(ImportError):
        import gym  # noqa: F401  # lazy: optional dependency, imported with its notice dropped
    text = captured.getvalue()
    if text and not text.startswith("Gym has been unmaintained"):
        sys.stderr.write(text)


_import_gym_quietly()
