"""The results version of each kind of run: what decides whether a finished run is current.

A run's kind is its game, with "-llm" when an LLM adapts its worlds to its feedback
(`version_key`, `RunConfig.llm_adapts`): the adaptation conversation can change while
every other run (the original game alone, the random and heuristic designers, LLM
worlds generated once) stays what it was.
A finished run records the version its kind had when it started (its provenance,
`envgen.store.provenance`). It is current, and never retrained, while that equals the
number here; edits that change no number (a comment, a device fix, an error message)
leave every committed run current. Bump a game's version in the same commit as a change
that alters what its runs produce (episodes, metrics, LLM prompts, scores); the guard
test (tests/test_results_version.py) replays a small fixed-seed run set with this tree
and, per run, with the code of the commit that last changed its key's value here (the
parsed mapping, not the file's bytes: touching this file, or bumping another key, does
not move a key's reference), and fails, naming the first differing output, when they
differ and the key's version did not change.

Keep the declaration a literal mapping: the guard reads it with `ast.literal_eval`.
"""

RESULTS_VERSION: dict[str, int] = {"crafter": 1, "heist": 1, "crafter-llm": 2, "heist-llm": 1}


def version_key(game: str, llm_adapts: bool) -> str:
    """The `RESULTS_VERSION` key of a run of `game` whose worlds an LLM adapts, or not."""
    return f"{game}-llm" if llm_adapts else game
