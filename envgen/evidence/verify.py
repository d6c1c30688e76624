"""`envgen verify` (`make verify`): re-derive every committed number from the raw run logs.

    envgen verify            # one line per check; exit 1 on any difference (or history needed)

Trains nothing and calls no LLM. It checks, in order:
1. the LLM response cache (every file's key and fields, as `envgen llm verify`), and
   every feedback call of a sealed run filed under its protocol slot;
2. the run store: every run a runs.json uses is sealed and of the code's results
   version; every sealed run, in results/runs or anywhere else in the tree (as
   results/audit's), is the run its folder names (`envgen.loop.identity`: no
   symbolic links, run.yaml's config hash and seed, final metrics and provenance
   agree), its files match its manifest, and every number of its final_metrics.json
   that a report shows is re-derived from its logs (`envgen.evidence.derive`: score,
   reward, success rates, first unlocks, Heist's sub-goals, global_steps, SFL's
   and PLR's curation_steps and env_steps, llm_calls, llm_replay), as are its
   llm_accounting.json counts;
3. per table (dvc.yaml's runs.json list): runs.json's rows against the plan the
   pipeline makes from the replication file and profile (`envgen.evidence.verify_plan`:
   each row lists exactly its planned runs that are finished), a not_recorded or
   llm_unusable row's reason re-derived from the LLM cache (`envgen.evidence.row_labels`),
   every run entry re-derived from its run's final metrics, the table's metrics.json
   and scores.json from runs.json, and the report's results/tables/<table>.md/.csv,
   score-vs-step CSVs (results/plots/<table>/) and learning curves
   (results/curves/<table>.csv) rebuilt in a temporary directory and compared byte for
   byte; a table whose runs cannot be read fails its own line, and the other tables are
   still checked;
4. results/metrics.json and results/CLAIMS.md rebuilt the same way;
5. the result figures README.md, docs/ and results/**/README.md quote in prose: each
   passage of docs/templates/ filled from the runs and compared byte for byte at every
   copy, and any other number that looks like a result named with its file and line
   (`envgen.evidence.docfigures`, `doc_templates`, `doc_numbers`);
6. per registered campaign, that git's history has its registration committed before
   every run its runs.json lists (`envgen.evidence.registration`; in a checkout without
   the history the line says "not checked" and why; in a shallow clone verify then exits
   1 with "history needed: git fetch --unshallow", in a tree outside git it counts
   neither way);
7. that committed evidence is what its commit added (`envgen.evidence.history`): every
   committed run's manifest is the one the commit that first added the run wrote,
   unless each later change is recorded in results/run_changes.yaml, and every
   registration's text above its "Deviations" is its first commit's, unless its
   Deviations name each commit that changed it; without git's history (a shallow
   clone) these fail with "history needed: git fetch --unshallow".
The figures' images are not compared (their bytes depend on the matplotlib build);
their data are the plot CSVs and tables above.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the checks load scipy (below): annotations only
    from envgen.evidence.checks import Check


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "verify",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(func=main)


def main(args: argparse.Namespace | None = None) -> int:
    if not Path("dvc.yaml").is_file():
        print("envgen verify: no dvc.yaml here; run it from the repository's root", file=sys.stderr)
        return 2
    # lazy: the checks load scipy, the report and the pipeline (about 1 s), which
    # `envgen verify --help` must not (tests/test_lazy_imports.py)
    from envgen.evidence.checks import verify

    checks = verify()
    text, code = summary(checks)
    print(text)
    return code


def summary(checks: Sequence[Check]) -> tuple[str, int]:
    """The closing line(s) and exit code: 1 on any difference, and on any check this
    checkout could make once it has what it lacks (a shallow clone: the history), one
    line per thing lacking; 0 otherwise."""
    bad = [c for c in checks if not c.ok]
    unchecked = [c for c in checks if not c.checked]
    needed: dict[str, list[str]] = {}
    for c in unchecked:
        if c.needed:
            needed.setdefault(c.needed, []).append(c.name)
    lines = [
        f"{len(checks) - len(bad) - len(unchecked)} of {len(checks)} checks match"
        + ("" if not bad else "; " + f"{len(bad)} differ")
        + ("" if not unchecked else f"; {len(unchecked)} not checked here")
    ]
    lines += [f"{need} (not checked here: {', '.join(names)})" for need, names in needed.items()]
    return "\n".join(lines), 1 if bad or needed else 0


if __name__ == "__main__":
    sys.exit(main())
