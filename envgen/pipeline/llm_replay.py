"""DVC stage `llm_replay`: replay every planned initial LLM call from the cache.

    python -m envgen.pipeline.llm_replay --cache-dir data/llm_cache \
        --out results/llm/replay.json

Each planned call (`envgen.llm.planned_calls.PLANNED_CALLS`) of the bundled local model is
asked through the designer in replay mode, so its cached reply is verified, parsed and
counted; a missing one is listed with the command that records it. Every cache file
is integrity-checked on the way (`envgen.llm.cache`). Never calls the network.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envgen.errors import CacheMissError, EnvGenError
from envgen.files import write_json_atomic
from envgen.input_checks import OneLineParser, existing_dir, fail
from envgen.llm.cache import DEFAULT_CACHE_DIR, CachedLLM
from envgen.llm.client import backend_config
from envgen.llm.conversation import EnvironmentDesigner
from envgen.llm.planned_calls import PLANNED_CALLS


def replay_planned(cache_dir: Path) -> dict[str, Any]:
    """Counts for `dvc metrics show` and, by label, the calls that are missing and why:
    {"recorded": n, "missing": n, "environments": n, "cache_files": n, "missing_calls": {}}."""
    backend = backend_config("local")
    llm = CachedLLM("replay", cache_dir, backend)
    missing: dict[str, str] = {}
    environments = 0
    for label, call in PLANNED_CALLS.items():
        designer = EnvironmentDesigner(call.options(backend), llm)
        try:
            environments += len(designer.generate(call.n).configs)
        except CacheMissError as exc:
            missing[label] = str(exc)
    return {
        "recorded": len(PLANNED_CALLS) - len(missing),
        "missing": len(missing),
        "environments": environments,
        "cache_files": sum(1 for _ in llm.cache.entries()),
        "missing_calls": missing,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(
        prog="python -m envgen.pipeline.llm_replay", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR)
    parser.add_argument("--out", type=Path, required=True, help="replay summary (JSON)")
    args = parser.parse_args(argv)
    try:
        summary = replay_planned(existing_dir(args.cache_dir, "the LLM response cache"))
    except EnvGenError as exc:
        return fail(parser.prog, exc)
    write_json_atomic(args.out, summary)
    print(f"[llm_replay] {summary['recorded']} recorded, {summary['missing']} missing")
    return 0


if __name__ == "__main__":
    sys.exit(main())
