"""The results version of each game: what decides whether a finished run is current.

A finished run records the version its game had when it started (`provenance.json`,
`envgen.store.provenance`). It is current, and never retrained, while that equals the
number here; edits that change no number (a comment, a device fix, an error message)
leave every committed run current. Bump a game's version in the same commit as a change
that alters what its runs produce (episodes, metrics, LLM prompts, scores); the guard
test (tests/test_results_version.py) replays a small fixed-seed run set with this tree
and with the code of the commit that last changed a version value here (the parsed
mapping, not the file's bytes: touching this file without changing a number does not
move the reference), and fails, naming the first differing output, when they differ and
the version did not change.

Keep the declaration a literal mapping: the guard reads it with `ast.literal_eval`.
"""

RESULTS_VERSION: dict[str, int] = {"crafter": 2, "heist": 1}
