"""DVC stage `train@<table>`: run a table's jobs under the chosen profile, write runs.json.

    python -m envgen.pipeline.train replication/table2.yaml --params params.yaml \
        --runs-root results/runs --out results/table2/runs.json \
        --metrics results/table2/metrics.json --plots results/table2/scores.json

Reads `profile`, `profiles.<profile>`, `executor` and `execution` from params.yaml,
checked by `envgen.pipeline.params_stage`. LLM replies are replayed from the cache; a
missing one makes its row "not_recorded" (never a failed stage). A run that still fails
after its retries fails the stage (exit 2, after runs.json is written) so that the next
`dvc repro` retries it. `--llm-mode fill` records missing replies instead
(`envgen.pipeline.recording`). `--plan` prints what a profile would run (runs and env
steps per table; GPU-hours: `envgen.pipeline.cost`) and exits.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from envgen.errors import ConfigError, EnvGenError
from envgen.files import write_json_atomic
from envgen.input_checks import OneLineParser
from envgen.llm.cache import DEFAULT_CACHE_DIR, MATCHES
from envgen.llm.client import DEFAULT_BACKEND, KEYS_HELP, LOCAL_MODEL, LOCAL_MODELS
from envgen.pipeline import recording
from envgen.pipeline.cost import plan_summary
from envgen.pipeline.executor import execute
from envgen.pipeline.job_status import CONFIG_ERROR, FAILED, results_versions
from envgen.pipeline.jobs import Settings
from envgen.pipeline.params_stage import check_device, load_settings
from envgen.pipeline.plan import distinct_jobs, plan_file
from envgen.pipeline.results import table_metrics, table_results, table_scores


def build_parser() -> OneLineParser:
    """The stage's command line (its --backend default is `DEFAULT_BACKEND`, as every
    command's that calls a model)."""
    parser = OneLineParser(
        prog="python -m envgen.pipeline.train", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("tables", type=Path, nargs="+", help="replication/*.yaml files")
    parser.add_argument("--params", type=Path, default=Path("params.yaml"))
    parser.add_argument("--profile", help="override params.yaml's `profile`")
    parser.add_argument("--runs-root", type=Path, help="the run store (all but --plan)")
    parser.add_argument(
        "--out", type=Path, nargs="*", default=[], help="runs.json per table, in order"
    )
    parser.add_argument("--metrics", type=Path, nargs="*", default=[], help="per --out")
    parser.add_argument("--plots", type=Path, nargs="*", default=[], help="per --out")
    parser.add_argument("--llm-mode", choices=("replay", "fill"), default="replay")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR)
    parser.add_argument(
        "--backend",
        choices=("local", "openai", "compatible"),
        default=DEFAULT_BACKEND,
        help="fill mode: who answers the misses; local (default) = the bundled model's "
        f"server; openai / compatible record --model's rows ({KEYS_HELP})",
    )
    parser.add_argument(
        "--model",
        help="fill mode: the model to record (local: one of "
        f"{', '.join(LOCAL_MODELS)}; default: the one the rows ask for, else {LOCAL_MODEL})",
    )
    parser.add_argument("--base-url", help="compatible backend: the server's /v1 URL")
    parser.add_argument(
        "--max-usd",
        type=float,
        help="fill mode, priced model: stop before a call that could take this session's "
        "spending past this many US dollars (required for priced models)",
    )
    parser.add_argument(
        "--replay",
        choices=MATCHES,
        default="slot",
        help="slot (default): a reply recorded on another machine is used for its call even "
        "when the feedback numbers differ (drift reported in runs.json); strict: exact "
        "requests only, for same-machine audits (docs/llm.md, 'Replay modes')",
    )
    parser.add_argument(
        "--plan",
        action="store_true",
        help="print the runs and env steps (a GPU profile: runs per GPU, GPU-hours); train nothing",
    )
    parser.add_argument(
        "--gpu-sps",
        type=float,
        help="--plan: measured env steps/s of one GPU with its runs together "
        "(`envgen bench train --device cuda`), instead of envgen.pipeline.gpu_plan's measured "
        "or assumed figures",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.runs_root is None and not args.plan:
        parser.error("--runs-root is required (the run store, e.g. results/runs)")
    for name in ("out", "metrics", "plots"):
        if getattr(args, name) and len(getattr(args, name)) != len(args.tables):
            parser.error(f"give one --{name} path per table (or none)")
    try:
        profile, executor = load_settings(args.params, args.profile)
        plans = [plan_file(path, profile) for path in args.tables]
        for path in [*args.out, *args.metrics, *args.plots]:  # before any run
            if path.is_dir():
                raise ConfigError("", "is a directory; give a JSON file path", file=path)
        if args.plan:
            print(plan_summary(plans, profile, executor, args.gpu_sps))
            return 0
        record = recording.recording_spec(args)
        if record is not None:
            assert record.record_model is not None
            print(recording.recording_estimate(plans, record.record_model), flush=True)
        check_device(profile, executor)
        local = recording.local_model_to_serve(
            plans, args.model if args.backend == "local" else None
        )
        with recording.llm_spec(args.llm_mode, args.cache_dir, args.replay, record, local) as llm:
            settings = Settings.for_profile(profile, args.runs_root, llm, executor.env_workers)
            results = execute(distinct_jobs(plans), settings, executor)
    except EnvGenError as exc:
        print(f"envgen.pipeline.train: {exc}", file=sys.stderr)
        return 1
    codes = results_versions()
    for i, (plan, path) in enumerate(zip(plans, args.tables, strict=True)):
        fill = (
            f"python -m envgen.pipeline.train {path} --params {args.params} "
            f"--runs-root {args.runs_root} --llm-mode fill"
        )
        table = table_results(plan, profile, results, args.runs_root, codes, fill)
        for paths, data in (
            (args.out, table),
            (args.metrics, table_metrics(table)),
            (args.plots, table_scores(table)),
        ):
            if paths:
                write_json_atomic(paths[i], data)
                print(f"[pipeline] wrote {paths[i]}")
    for status, what in (
        (
            FAILED,
            "failed after retries (first: {}); the stage fails so that the next "
            "`dvc repro` tries them again",
        ),
        (CONFIG_ERROR, "have a setting no run can follow (first: {})"),
    ):
        bad = [r for r in results.values() if r.status == status]
        if bad:
            first = f"{bad[0].run_dir}: {bad[0].reason}"
            print(f"envgen.pipeline.train: {len(bad)} run(s) {what.format(first)}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
