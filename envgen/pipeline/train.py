"""DVC stage `train@<table>`: run a table's jobs under the chosen profile, write runs.json.

    python -m envgen.pipeline.train replication/table2.yaml --params params.yaml \
        --runs-root results/runs --out results/table2/runs.json \
        --metrics results/table2/metrics.json --plots results/table2/scores.json

Reads `profile`, `profiles.<profile>`, `executor` and `execution` from params.yaml.
LLM replies are replayed from the cache; a missing one makes its row "not_recorded"
(never a failed stage). A run that still fails after its retries fails the stage
(exit 2, after runs.json is written) so that the next `dvc repro` retries it.
`--llm-mode fill` records the bundled local model's missing replies through a local
server started here (docs/pipeline.md, "Recording the local model's adaptation calls");
with `--backend openai --model M --max-usd X` (or `--backend compatible --base-url URL`)
it records model M's replies instead, after printing the calls and their estimated cost,
and stops before a call that could pass X (docs/llm.md, "Recording the paper's model").
`--plan` prints what a profile would run (runs and env steps per table) and exits.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from envgen.errors import ConfigError, EnvGenError
from envgen.files import write_json_atomic
from envgen.input_checks import OneLineParser, at_most, check_types, read_yaml_mapping, unknown_key
from envgen.llm.accounting import PRICES_PER_M_TOKENS
from envgen.llm.budget import estimate_usd, run_calls
from envgen.llm.cache import DEFAULT_CACHE_DIR, MATCHES
from envgen.llm.client import LOCAL_MODEL, LOCAL_MODELS, backend_config
from envgen.pipeline import gpu_plan
from envgen.pipeline.executor import ExecutorConfig, execute
from envgen.pipeline.job_status import FAILED, results_versions
from envgen.pipeline.jobs import LLMSpec, Settings
from envgen.pipeline.plan import Job, RandomJob, TablePlan, load_table, plan_table
from envgen.pipeline.profile import Profile, load_profile
from envgen.pipeline.results import table_metrics, table_results, table_scores

# The top-level keys of params.yaml.
PARAMS_KEYS = ("profile", "profiles", "executor", "execution")


def read_params(path: Path) -> dict[str, Any]:
    """params.yaml as a mapping; a missing, empty or malformed file is a `ConfigError`."""
    return read_yaml_mapping(path, "the pipeline parameters (profile, profiles, execution)")


def executor_config(params: dict[str, Any]) -> ExecutorConfig:
    """`executor` and `execution` of params.yaml, unknown keys and wrong types rejected by
    name."""
    execution = params.get("execution") or {}
    if not isinstance(execution, dict):
        raise ConfigError("execution", "must be a mapping of setting: value")
    allowed = {f.name for f in dataclasses.fields(ExecutorConfig)} - {"kind"}
    unknown = sorted(set(execution) - allowed)
    if unknown:
        raise unknown_key(f"execution.{unknown[0]}", unknown[0], allowed)
    check_types(ExecutorConfig, execution, "execution.")
    for name, limit, why in (
        ("workers", 4096, "runs at once"),
        ("env_workers", 1024, "processes per run"),
        ("gpus_per_run", 64, "GPUs per run"),
        ("retries", 100, "attempts of a failed run"),
    ):
        if name in execution:
            at_most(execution[name], limit, f"execution.{name}", why)
    kind = params.get("executor", "local")
    if not isinstance(kind, str):
        raise ConfigError("executor", f"{kind!r} is not a string; use local or ray")
    return ExecutorConfig(kind=kind, **execution)


def check_params(params: dict[str, Any]) -> Profile:
    """Every profile and the execution settings of params.yaml; returns the chosen profile.

    Validating all profiles (not only the chosen one) catches a typo in `paper` while
    `smoke` runs, before anyone spends a GPU-day to find it. An unknown top-level key
    (`profle: paper`) is refused with the nearest known name: ignored, it would train
    another profile than the one meant.
    """
    unknown = sorted(set(params) - set(PARAMS_KEYS), key=str)
    if unknown:
        raise unknown_key(str(unknown[0]), unknown[0], PARAMS_KEYS)
    profiles = params.get("profiles") or {}
    if isinstance(profiles, dict):
        for name in profiles:
            load_profile(params, str(name))
    executor_config(params)
    return load_profile(params)


def load_settings(path: Path, profile: str | None) -> tuple[Profile, ExecutorConfig]:
    """The chosen profile and the executor of params.yaml at `path`, every profile checked
    first; a mistake names the file."""
    try:
        params = read_params(path)
        check_params(params)
        return load_profile(params, profile), executor_config(params)
    except ConfigError as exc:
        raise exc.in_file(path) from None


@contextlib.contextmanager
def llm_spec(
    mode: str,
    cache_dir: Path,
    match: str = "slot",
    record: LLMSpec | None = None,
    local_model: str = LOCAL_MODEL,
) -> Iterator[LLMSpec]:
    """Replay needs nothing; fill starts `local_model`'s server for the jobs, or records
    another model through `record`'s backend (no server here)."""
    if mode == "replay":
        yield LLMSpec("replay", str(cache_dir), match=match)
        return
    if record is not None:
        yield dataclasses.replace(record, mode=mode, cache_dir=str(cache_dir), match=match)
        return
    from envgen.llm.server import LocalServer, ServerOptions

    with LocalServer(ServerOptions.for_model(local_model)) as server:
        yield LLMSpec(mode, str(cache_dir), server.base_url, local_model, match=match)


def recording_spec(args: argparse.Namespace) -> LLMSpec | None:
    """The spec for recording a non-local model (`--backend openai|compatible`), or None."""
    if args.backend == "local":
        if args.model not in (None, *LOCAL_MODELS):
            raise ConfigError(
                "model",
                f"the local backend serves only {', '.join(map(repr, LOCAL_MODELS))}; record "
                f"{args.model!r} with --backend openai or --backend compatible --base-url URL",
            )
        return None
    if args.llm_mode != "fill" or not args.model:
        raise ConfigError("backend", f"--backend {args.backend} needs --llm-mode fill and --model")
    backend_config(args.backend, model=args.model, base_url=args.base_url)  # checks the pair
    if args.max_usd is None and args.model in PRICES_PER_M_TOKENS:
        raise ConfigError(
            "max_usd", f"{args.model!r} is priced: give --max-usd (the most you will spend)"
        )
    return LLMSpec(
        record_backend=args.backend,
        record_model=args.model,
        record_base_url=args.base_url,
        max_usd=args.max_usd,
        since=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )


def recording_estimate(plans: Sequence[TablePlan], model: str) -> str:
    """What recording `model` asks for: runs, LLM calls and estimated cost, printed first."""
    calls: list[tuple[int, int]] = []
    runs = 0
    for job in distinct_jobs(plans):
        config = getattr(job, "config", None)
        if config is None or not config.uses_llm or config.llm_model != model:
            continue
        runs += 1
        calls += run_calls(
            config.method, config.n_cycles, config.envs_per_call, config.curriculum_pool
        )
    usd = estimate_usd(model, calls)
    cost = "no price known" if usd is None else f"about ${usd:.2f}"
    return (
        f"[record] {model}: {runs} runs, at most {len(calls)} calls (re-asks excepted; "
        f"replies already in the cache are not asked again), {cost}"
    )


def table_plan(path: Path, profile: Profile) -> TablePlan:
    """The plan of one replication file; its mistakes name the file."""
    try:
        return plan_table(load_table(path), profile)
    except ConfigError as exc:
        raise exc.in_file(path) from None


def check_outputs(paths: Sequence[Path]) -> None:
    """Fail before any run when an output path cannot be written as a file."""
    for path in paths:
        if path.is_dir():
            raise ConfigError("", "is a directory; give a JSON file path", file=path)


def check_device(profile: Profile, executor: ExecutorConfig) -> None:
    """Fail before any run starts when a GPU profile would train on this machine (local
    workers or a local Ray instance) and it has no GPU; a cluster's workers may have one."""
    on_cluster = executor.kind == "ray" and executor.ray_address is not None
    if on_cluster or not profile.device.startswith("cuda"):
        return
    import torch

    if not torch.cuda.is_available():
        raise ConfigError(
            f"profiles.{profile.name}.device",
            f"{profile.device!r}, but torch finds no GPU on this machine, where the runs "
            "would train. Run it on a GPU machine; or send the runs to a cluster with "
            "`-S executor=ray -S execution.ray_address=auto`; or train on CPU (slow) with "
            f'`-S profiles.{profile.name}.device=cpu` (docs/pipeline.md, "Paper scale").',
        )


def plan_summary(
    plans: Sequence[TablePlan],
    profile: Profile,
    executor: ExecutorConfig | None = None,
    gpu_sps: float | None = None,
) -> str:
    """Runs and env steps per table and in all (a run shared by tables counted once);
    for a GPU profile, runs per GPU and GPU-hours (estimates, `envgen.pipeline.gpu_plan`)."""
    lines = [f"profile {profile.name!r} (device {profile.device}):"]
    lines += [f"  {plan.table:12s} {_budget(plan.jobs)}" for plan in plans]
    lines.append(f"  {'distinct':12s} {_budget(distinct_jobs(plans))}")
    if profile.device.startswith("cuda"):
        lines += gpu_summary(distinct_jobs(plans), executor or ExecutorConfig(), gpu_sps)
    return "\n".join(lines)


def gpu_summary(
    jobs: Sequence[Job | RandomJob], executor: ExecutorConfig, gpu_sps: float | None
) -> list[str]:
    """Runs per GPU by memory and GPU-hours per network, from the estimates of gpu_plan."""
    configs = [job.config for job in jobs if isinstance(job, Job)]
    largest = gpu_plan.largest_run(configs)
    if largest is None:
        return []
    card, source = gpu_plan.card_memory(executor.gpu_memory_gib)
    fit = gpu_plan.runs_per_gpu(largest.total, card, int(executor.gpu_reserve_gib * gpu_plan.GIB))
    if executor.gpus_per_run > 0:
        fit = min(fit, max(1, int(1 / executor.gpus_per_run)))
    reserve = int(executor.gpu_reserve_gib * gpu_plan.GIB)
    lines = [f"  GPU card: {source}, {executor.gpu_reserve_gib:g} GiB kept free"]
    for kind in sorted({(c.game, c.model, c.agent) for c in configs}):
        memory = gpu_plan.largest_run([c for c in configs if (c.game, c.model, c.agent) == kind])
        assert memory is not None
        alone = gpu_plan.runs_per_gpu(memory.total, card, reserve)
        lines.append(f"  {'/'.join(kind)}: {alone} runs per GPU; {memory.describe()}")
    lines.append(f"  runs per GPU when these rows run together: {fit} (the largest run's)")
    total, sources = 0.0, set()
    for kind in sorted({_cohort_kind(c) for c in configs if c.cohort > 1}):
        measured = gpu_plan.cohort_rate(*kind)
        if measured is None:
            continue  # no cohort of this kind measured: planned with the runs' rate below
        steps = sum(c.total_steps for c in configs if _cohort_kind(c) == kind)
        configs = [c for c in configs if _cohort_kind(c) != kind]
        hours = gpu_plan.gpu_hours(steps, 0, measured[0])
        sources.add(f"{kind[0]} cohorts: {measured[1]}")
        total += hours
        lines.append(
            f"  GPU-hours, {kind[0]} network in cohorts of {kind[2]}"
            + (f" in {kind[3]} groups" if kind[3] > 1 else "")
            + f": {hours:,.0f} "
            f"({steps / 1e6:,.1f}M env steps at {measured[0]:,.0f} per GPU-second: {measured[1]})"
        )
    for model in sorted({c.model for c in configs}):
        steps = sum(c.total_steps for c in configs if c.model == model)
        ad_steps = sum(c.total_steps for c in configs if c.model == model and c.agent == "ad")
        rate, source = gpu_plan.gpu_rate(model, gpu_sps, fit)
        hours = gpu_plan.gpu_hours(steps, ad_steps, rate)
        sources.add(f"{model}: {source}")
        if ad_steps:
            sources.add(f"AD's step {gpu_plan.AD_COST:g} x PPO's: ASSUMED, not measured")
        total += hours
        lines.append(
            f"  GPU-hours, {model} network: {hours:,.0f} ({steps / 1e6:,.1f}M env steps at "
            f"{rate:,.0f} per GPU-second: {source})"
        )
    lines.append(
        f"  GPU-hours in all: {total:,.0f} ({'; '.join(sorted(sources))}; "
        "docs/pipeline.md, 'GPU plan')"
    )
    return lines


def distinct_jobs(plans: Sequence[TablePlan]) -> list[Job | RandomJob]:
    """Every job of `plans` once, in table order: a row shared by tables trains once."""
    jobs: dict[tuple[str, int], Job | RandomJob] = {}
    for plan in plans:
        for job in plan.jobs:
            jobs.setdefault(job.key, job)
    return list(jobs.values())


def _budget(jobs: Sequence[Job | RandomJob]) -> str:
    trained = [job for job in jobs if isinstance(job, Job)]
    steps = sum(job.config.total_steps for job in trained)
    episodes = sum(job.episodes for job in jobs if isinstance(job, RandomJob))
    return (
        f"{len(trained):4d} training runs, {steps / 1e6:9.2f}M env steps"
        f" (+{episodes} random-policy episodes)"
    )


def run_plans(
    plans: Sequence[TablePlan],
    profile: Profile,
    executor: ExecutorConfig,
    runs_root: Path,
    llm: LLMSpec,
) -> dict:
    """Run the distinct jobs of all `plans` together; returns results by job key."""
    return execute(distinct_jobs(plans), job_settings(profile, executor, runs_root, llm), executor)


def job_settings(
    profile: Profile, executor: ExecutorConfig, runs_root: Path, llm: LLMSpec
) -> Settings:
    """How every job of this profile runs (shared by the train stage and campaigns)."""
    return Settings(
        runs_root=str(runs_root),
        versions=results_versions(),
        device=profile.device,
        env_workers=executor.env_workers,
        torch_threads=profile.torch_threads,
        deterministic=profile.deterministic,
        llm=llm,
    )


def main(argv: Sequence[str] | None = None) -> int:
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
        default="local",
        help="fill mode: who answers the misses; local (default) = the bundled model's "
        "server; openai / compatible record --model's rows (key from OPENAI_API_KEY)",
    )
    parser.add_argument(
        "--model",
        help="fill mode: the model to record (local: one of "
        f"{', '.join(LOCAL_MODELS)}, default {LOCAL_MODEL})",
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
        "(`envgen bench train --device cuda`), instead of gpu_plan's measured or assumed "
        "figures",
    )
    args = parser.parse_args(argv)
    if args.runs_root is None and not args.plan:
        parser.error("--runs-root is required (the run store, e.g. results/runs)")
    for name in ("out", "metrics", "plots"):
        if getattr(args, name) and len(getattr(args, name)) != len(args.tables):
            parser.error(f"give one --{name} path per table (or none)")
    try:
        profile, executor = load_settings(args.params, args.profile)
        plans = [table_plan(path, profile) for path in args.tables]
        check_outputs([*args.out, *args.metrics, *args.plots])
        if args.plan:
            print(plan_summary(plans, profile, executor, args.gpu_sps))
            return 0
        record = recording_spec(args)
        if record is not None:
            assert record.record_model is not None
            print(recording_estimate(plans, record.record_model), flush=True)
        check_device(profile, executor)
        local = args.model if args.backend == "local" and args.model else LOCAL_MODEL
        with llm_spec(args.llm_mode, args.cache_dir, args.replay, record, local) as llm:
            results = run_plans(plans, profile, executor, args.runs_root, llm)
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
    failed = [r for r in results.values() if r.status == FAILED]
    if failed:
        print(
            f"envgen.pipeline.train: {len(failed)} run(s) failed after retries (first: "
            f"{failed[0].run_dir}: {failed[0].reason}); the stage fails so that the next "
            "`dvc repro` tries them again",
            file=sys.stderr,
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())


def _cohort_kind(config: Any) -> tuple[str, bool, int, int]:
    """What a cohort's measured rate depends on (a `RunConfig`): network, bf16, W, groups."""
    return config.model, config.bf16_autocast, config.cohort, config.cohort_groups
