"""`envgen gpu check|bench|run|import`: drive a GPU machine with no network, jobs of at most
10 minutes, a small working tree sent in and a few small files sent back.

On the GPU machine (its own torch, plus the wheels `make gpu-wheels` builds; docs/pipeline.md):
    envgen gpu check --out $OUT                       # versions, device tests, tiny runs
    envgen gpu bench --out $OUT                       # env steps/s at 1..16 runs per GPU
    envgen gpu run paper replication/table1.yaml --row PPO --store /scratch/runs --out $OUT
        (again and again: each call trains at most --budget-min minutes, then packs the
        runs finished so far into at most 8 files of at most 16 MiB in $OUT)
Back home:
    envgen gpu import runs-*.tar.gz --runs-root results/runs
Before a session, on any machine:
    envgen gpu dry-run --start-s 120                  # each call's planned seconds
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from pathlib import Path

from envgen.errors import ConfigError
from envgen.gpu.archive import REFUSED, import_archives, pack_runs
from envgen.gpu.run_args import BUDGET_MIN, CHECKPOINT_MINUTES, PACK_RESERVE_S, seed_list
from envgen.input_checks import comma_list, number_in, torch_device, whole_number


def _run(args: argparse.Namespace) -> int:
    # lazy: the pipeline, 0.2 s more of every `envgen gpu` command's start (measured)
    from envgen.gpu.chunk import check_store, run_chunk, selected_jobs

    started = time.monotonic()
    budget_s = args.budget_min * 60 - min(PACK_RESERVE_S, args.budget_min * 15)
    if args.checkpoint_minutes * 60 >= budget_s:
        raise ConfigError(
            "--checkpoint-minutes",
            f"{args.checkpoint_minutes:g} is not below this call's training time "
            f"({budget_s / 60:.2f} of --budget-min {args.budget_min:g}): no run would "
            "checkpoint before the stop; give less",
        )
    selected_jobs(args)  # the child plans again; a mistake here is one line, no child
    args.store = check_store(args.store)
    outcome = run_chunk(args, budget_s)
    written, notes = pack_runs(args.store, args.out)
    for line in notes:
        print(f"[gpu run] {line}")
    took = time.monotonic() - started
    print(
        f"[gpu run] training {outcome} after {took:.0f} s; packed {len(written)} file(s) "
        f"into {args.out}" + ("; call again to continue" if outcome == "budget" else "")
    )
    return 0 if outcome in ("done", "budget") else 1


def _import(args: argparse.Namespace) -> int:
    lines = import_archives(args.archives, args.runs_root)
    for line in lines:
        print(f"[gpu import] {line}")
    return 1 if any(line.startswith(REFUSED) for line in lines) else 0


def _torch_command(name: str) -> Callable[[argparse.Namespace], int]:
    """Command `name` of check.py or probe.py, imported only when it runs."""

    def call(args: argparse.Namespace) -> int:
        # lazy: torch, 0.85 s more of `envgen gpu --help`, 0.15 s without (measured)
        from envgen.gpu import check, probe

        commands = {"check": check.check, "bench": check.bench, "kernels": probe.run_kernels}
        return commands[name](args)

    return call


def _plan_command(name: str) -> Callable[[argparse.Namespace], int]:
    """Command `name` of rate.py or dry_run.py, imported only when it runs."""

    def call(args: argparse.Namespace) -> int:
        from envgen.gpu import dry_run, rate  # lazy: the pipeline's planner, as _run

        commands = {"rate": rate.run_rate, "params": rate.run_params, "dry-run": dry_run.run}
        return commands[name](args)

    return call


def _model_name(name: str) -> str:
    """A network preset's name, checked when parsed: a wrong one fails before any work."""
    from envgen.agents.config import model_preset  # lazy: crafter, 0.14 s (measured)

    model_preset(name)
    return name


def _device_args(parser: argparse.ArgumentParser, model: str = "paper") -> None:
    parser.add_argument("--device", type=torch_device, default="cuda", help="default cuda")
    parser.add_argument(
        "--model",
        type=_model_name,
        default=model,
        help=f"network preset: paper, impala-small or nature (default {model})",
    )
    parser.add_argument("--out", type=Path, required=True, help="folder of files sent back")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "gpu",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="gpu_command", metavar="COMMAND", required=True)

    text = "versions, device tests, tiny PPO/AD runs, kill+resume"
    check = sub.add_parser("check", help=text, description=f"{text}; the report goes to --out")
    _device_args(check)
    check.add_argument(
        "--steps", type=whole_number(128), default=1024, help="tiny run length (AD's aux: 1024)"
    )
    check.add_argument("--no-device-tests", action="store_true", help="skip the pytest step")
    check.set_defaults(func=_torch_command("check"))

    text = "envgen bench train for PPO and AD on the device"
    bench = sub.add_parser("bench", help=text, description=f"{text}, at each --concurrency level")
    _device_args(bench)
    bench.add_argument("--concurrency", default="1,2,4,8,16", help="runs at once per level")
    bench.add_argument("--rollouts", type=whole_number(1))
    bench.add_argument("--deterministic", action="store_true")
    bench.add_argument("--tiny", action="store_true", help="2 envs x 16 steps (a smoke test)")
    bench.set_defaults(func=_torch_command("bench"))

    text = "the cohort's kernel modes checked on the device, and the rate a call is sized from"
    probe = sub.add_parser(
        "probe", help=text, description=f"{text} (envgen.gpu.probe, envgen.gpu.rate)"
    )
    inner = probe.add_subparsers(dest="probe_command", metavar="PROBE", required=True)
    kernels = inner.add_parser(
        "kernels",
        help="capture, replay = uncaptured, repeat, pipelined = groups; OUT/kernel_checks.json",
    )
    _device_args(kernels)
    kernels.add_argument(
        "--sizes",
        type=comma_list(
            int, "cohort sizes of at least 4, joined by commas", allowed=lambda w: w >= 4
        ),
        help="cohort sizes W, each split in 2 groups for the pipelined check (default 4,8; "
        "--tiny: 4)",
    )
    kernels.add_argument(
        "--kernels",
        type=comma_list(
            str,
            "graph and/or compile, joined by commas",
            distinct=True,
            allowed=lambda k: k in ("graph", "compile"),
        ),
        default=("graph", "compile"),
        help="the modes to check (default graph,compile; compile adds a compilation per "
        "precision, about a minute each on a GPU)",
    )
    kernels.add_argument("--tiny", action="store_true", help="a tiny network and rollout")
    kernels.set_defaults(func=_torch_command("kernels"))
    rate = inner.add_parser(
        "rate", help="the fastest cohort of `envgen bench train`'s JSON line, for gpu run --sps"
    )
    rate.add_argument("bench", type=Path, help="a file whose last JSON line is bench train's")
    rate.add_argument("--out", type=Path, required=True, help="the rate file to write")
    rate.set_defaults(func=_plan_command("rate"))
    params = inner.add_parser(
        "params", help="params.yaml plus a profile that trains cohorts at a rate file's W and mode"
    )
    params.add_argument("rate", type=Path, help="a rate file of `envgen gpu probe rate`")
    params.add_argument("--out", type=Path, required=True, help="the params file to write")
    params.add_argument("--params", type=Path, default=Path("params.yaml"))
    params.add_argument("--base", default="paper", help="the profile it copies (default paper)")
    params.set_defaults(func=_plan_command("params"))

    text = "the planned seconds of each step of the prepared session's calls A and B"
    dry = sub.add_parser(
        "dry-run", help=text, description=f"{text} (results/gpu/next/; envgen.gpu.dry_run)"
    )
    dry.add_argument(
        "--start-s",
        type=number_in(0, 900),
        default=120.0,
        help="seconds the machine takes to start, out of the session's 900 (default 120)",
    )
    dry.add_argument(
        "--sps",
        type=number_in(0, math.inf),
        help="call B's env steps/s (the rate file's); default the plan's measured cohort rate",
    )
    dry.add_argument("--cohort", type=whole_number(2), default=4, help="call B's W (default 4)")
    dry.add_argument(
        "--kernels",
        default="graph",
        choices=("eager", "graph", "compile"),
        help="call B's kernel mode (default graph)",
    )
    dry.set_defaults(func=_plan_command("dry-run"))

    text = "train a profile's rows for at most --budget-min, then pack"
    run = sub.add_parser(
        "run",
        help=text,
        description=f"{text} the finished runs (summaries and logs, no checkpoints) into "
        "--out; call again to continue from the checkpoints in --store",
    )
    run.add_argument("profile", help="a profile of params.yaml (e.g. paper)")
    run.add_argument("tables", type=Path, nargs="+", help="replication/*.yaml files")
    run.add_argument("--row", action="append", help="only this row (repeatable; default all)")
    run.add_argument(
        "--seeds", type=seed_list, help="only these seeds, e.g. 0,1,2 (default the profile's)"
    )
    run.add_argument("--store", type=Path, required=True, help="run store outside the repo")
    run.add_argument("--out", type=Path, required=True, help="folder of files sent back")
    run.add_argument("--params", type=Path, default=Path("params.yaml"))
    run.add_argument(
        "--budget-min",
        type=number_in(0, BUDGET_MIN),
        default=BUDGET_MIN,
        help=f"wall-clock minutes of this call, packing included: more than 0, at most "
        f"{BUDGET_MIN:g} (the default)",
    )
    run.add_argument(
        "--checkpoint-minutes",
        type=number_in(0, BUDGET_MIN),
        default=CHECKPOINT_MINUTES,
        help="each run also checkpoints this long after its last checkpoint, so a stop at "
        f"the budget loses at most this much of it (default {CHECKPOINT_MINUTES:g})",
    )
    run.add_argument(
        "--sps",
        type=number_in(0, math.inf),
        help="env steps/s one cohort or run trains on this GPU, as `envgen bench train "
        "--cohort W` measured it in this call (default: the plan's measured rates); a "
        "cohort or run that would not finish inside the budget at this rate is not started",
    )
    run.set_defaults(func=_run)

    text = "unpack returned runs into the run store"
    imp = sub.add_parser(
        "import", help=text, description=f"{text}; each run is checked before it enters the store"
    )
    imp.add_argument("archives", type=Path, nargs="+", help="runs-NN.tar.gz files")
    imp.add_argument(
        "--runs-root", type=Path, default=Path("results/runs"), help="default results/runs"
    )
    imp.set_defaults(func=_import)
