"""`envgen verify` (`make verify`): re-derive every committed number from the raw run logs.

    envgen verify            # one line per check; exit 1 on any difference (or history needed)

Trains nothing and calls no LLM. It checks, in order (docs/pipeline.md, "Verify"):
1. the LLM response cache, and every feedback call of a sealed run under its slot;
2. the run store: every run a runs.json uses is sealed and current; every sealed run in
   the tree is the run its folder names, matches its manifest, and has its final metrics
   and LLM accounting re-derived from its logs (`envgen.evidence.derive`);
3. per table: runs.json against its plan and a not_recorded or llm_unusable row against
   the LLM cache (`verify_plan`); its run entries, metrics.json, scores.json, report
   table, plot CSVs and curves rebuilt in a temporary directory and compared byte for
   byte (a table that fails does so on its own line);
4. results/metrics.json and results/CLAIMS.md rebuilt the same way;
5. the result figures README.md, docs/ and results/**/README.md quote (`docfigures`);
6. each registered campaign's registration committed before every run it lists, and
7. committed evidence as the commit that added it wrote it (`history`); without git's
   history these say so, and a shallow clone exits 1: "history needed: git fetch
   --unshallow".
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
