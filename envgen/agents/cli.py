"""`envgen train`: PPO or AD in stock Crafter with a resumable run directory."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from envgen.agents.config import (
    AGENTS,
    MODEL_PRESETS,
    PPOConfig,
    add_rollout_arguments,
    model_preset,
    rollout_config,
)
from envgen.agents.device import add_device_arguments, set_deterministic
from envgen.agents.runlog import read_jsonl
from envgen.agents.threads import add_threads_argument, set_torch_threads
from envgen.envs.crafter.config import CrafterConfig
from envgen.envs.vector import workers_variable
from envgen.errors import ConfigError
from envgen.input_checks import whole_number
from envgen.store.manifest import LATEST_CHECKPOINT
from envgen.store.run_dir import EPISODES_LOG, METRICS_LOG, RunDir

DESCRIPTION = f"""\
Train the paper's PPO agent (Table 9 hyper-parameters) in stock Crafter, or with
--agent ad Achievement Distillation (PPO plus its auxiliary phase; docs/agent.md).

Writes to --out: {EPISODES_LOG} (one line per finished episode, crafter's stats.jsonl
schema plus the global step, phase and config index), {METRICS_LOG} (losses and
steps/s per rollout), {LATEST_CHECKPOINT} (every --checkpoint-every steps, atomic)
and {RunDir(Path()).summary} (Crafter score over the episodes of the last --score-window steps).
A killed run continued with --resume ends with the same metrics as an uninterrupted
one: a checkpoint holds the running episodes too (docs/agent.md).

Network presets (--model): paper = IMPALA [64,128,128] + 256 + 1024 (about 9 GFLOP per
env step with 3 epochs; GPU), impala-small = IMPALA [16,32,32] (0.6 GFLOP; slow CPU),
nature = strided 3-conv Nature-CNN size (0.06 GFLOP; laptop CPU).

The device is the CPU unless --device names a GPU; --deterministic, --bf16 and
--channels-last are GPU options (docs/agent.md, "On a GPU").
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "train",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--steps", type=whole_number(1), required=True, help="global env steps to train"
    )
    parser.add_argument(
        "--seed", type=whole_number(0), required=True, help="seed of torch, numpy, envs"
    )
    parser.add_argument("--out", type=Path, required=True, help="run directory")
    parser.add_argument(
        "--model",
        default="nature",
        choices=sorted(MODEL_PRESETS),
        help="network preset (default nature; presets below)",
    )
    parser.add_argument("--agent", default="ppo", choices=AGENTS, help="agent (default ppo)")
    parser.add_argument("--resume", action="store_true", help="continue from --out's checkpoint")
    add_device_arguments(parser)
    parser.add_argument(
        "--workers",
        type=whole_number(1),
        help="vec env worker processes (default $ENVGEN_ENV_WORKERS, else min(--num-envs, "
        "CPU cores))",
    )
    add_rollout_arguments(parser)
    parser.add_argument(
        "--checkpoint-every",
        type=whole_number(1),
        default=PPOConfig.checkpoint_every,
        help="checkpoint interval in env steps, whole rollouts (default %(default)s)",
    )
    parser.add_argument(
        "--score-window",
        type=whole_number(1),
        default=1_000_000,
        help=f"{RunDir(Path()).summary} scores episodes of the last this many steps (paper: 1M)",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    add_threads_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # lazy: torch, 0.75 s more of `envgen train --help`, 0.35 s without (measured)
    from envgen.agents.evaluate import training_window
    from envgen.agents.trainer import Trainer, crafter_vec_env_factory  # lazy: as above

    out = args.out
    if out.exists() and not out.is_dir():
        raise ConfigError("--out", f"{out} is a file; give a run directory (new or to resume)")
    if not args.resume and RunDir(out).episodes.exists():  # its logs would be appended to
        raise ConfigError(
            "--out", f"{out} holds a run; pass --resume to continue it, or give a new directory"
        )
    if args.workers is None:
        workers_variable()  # a bad $ENVGEN_ENV_WORKERS is one line, before any work
    set_torch_threads(args.torch_threads)
    set_deterministic(args.deterministic)
    ppo_cfg = rollout_config(args, checkpoint_every=args.checkpoint_every)
    trainer = Trainer(
        dataclasses.replace(
            model_preset(args.model), bf16_autocast=args.bf16, channels_last=args.channels_last
        ),
        ppo_cfg,
        args.seed,
        args.out,
        args.device,
        env_factory=crafter_vec_env_factory(args.workers),
        progress=not args.no_progress,
        agent=args.agent,
    )
    try:
        if args.resume and trainer.resume():
            print(f"resumed at step {trainer.global_step}", flush=True)
        trainer.train_until(args.steps, [CrafterConfig()], phase="crafter")
        if trainer.counters.checkpoint_step != trainer.global_step:
            trainer.checkpoint()
    finally:
        trainer.close()
    episodes = read_jsonl(RunDir(args.out).episodes)
    summary = training_window(episodes, args.score_window) if episodes else {"episodes": 0}
    summary["steps"] = trainer.global_step
    RunDir(args.out).summary.write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "success_rates"}))
    return 0
