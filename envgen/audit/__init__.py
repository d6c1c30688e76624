"""Checks of a finished run against its own files: its identity (`identity`: the run its
folder names) and the numbers a report prints, re-derived from its logs (`derive`).

Above the run's producers (loop, llm, envs, scoring), below the pipeline and verify,
which call them."""
