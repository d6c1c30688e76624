"""`envgen verify` (`make verify`): re-derive every committed number from the raw run logs.

    envgen verify            # one line per check; exit 1 on any difference (or history needed)

Trains nothing and calls no LLM. It checks, in order:
1. the LLM response cache (every file's key and fields, as `envgen llm verify`), and
   every feedback call of a sealed run filed under its protocol slot;
2. the run store: every run a runs.json uses is sealed and of the code's results
   version; every sealed run, in results/runs or anywhere in the tree (as
   results/audit's), is the run its folder names (`envgen.loop.identity`), matches its
   manifest, and has every reported number of its final_metrics.json and its
   llm_accounting.json counts re-derived from its logs (`envgen.evidence.derive`);
3. per table (dvc.yaml's runs.json list): its rows against the pipeline's plan
   (`verify_plan`), a not_recorded or llm_unusable row's reason against the LLM cache
   (there too), every run entry against its run's final metrics, metrics.json and
   scores.json against runs.json, and the report's results/tables/<table>.md/.csv,
   results/plots/<table>/ CSVs and results/curves/<table>.csv rebuilt in a temporary
   directory and compared byte for byte; a table that fails does so on its own line;
4. results/metrics.json and results/CLAIMS.md rebuilt the same way;
5. the result figures README.md, docs/ and results/**/README.md quote: each passage of
   docs/templates/ filled from the runs and compared at every copy, and any other
   number that looks like a result named with its file and line (`docfigures`,
   `doc_templates`, `doc_numbers`);
6. per registered campaign, its registration committed before every run its runs.json
   lists (`history`; without git's history the line says "not checked" and why; a
   shallow clone then exits 1 with "history needed: git fetch --unshallow");
7. committed evidence as its commit added it (`history`): every committed run's
   manifest as the commit that first added the run wrote it, and every registration's
   text above its "Deviations" as its first commit's, unless each change is recorded
   (results/run_changes.yaml; the Deviations); a shallow clone fails these with
   "history needed: git fetch --unshallow".
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
        "verify", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
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
