"""EnvGen replication: LLM-designed training environments for Crafter and Heist.

Importing the package imports gym first, dropping the four-line "Gym has been unmaintained"
notice that gym 0.26 prints to stderr (a print: warning filters cannot stop it) in every
process that imports crafter or procgen; with these pinned versions it says nothing a user
can act on. Anything else gym prints passes through.
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
