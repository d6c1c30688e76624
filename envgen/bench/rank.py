"""Do two validation seeds rank 16 environments alike? Picks `validation_steps` (docs/loop.md).

Table 2's Easy-to-hard and Adversarial curricula sort 16 designed environments by the
Crafter score of a fresh validation agent trained `validation_steps` in each
(`envgen.loop.curricula.rank_by_validation_agents`); the paper does not state that
budget, and a ranking worth acting on should not depend on the agent's seed. This builds
a pool with a non-LLM designer (exact on every machine; world rules "authors", as
designed worlds are played), trains two validation agents per environment (seeds
`derive_seed(base, "validation", i)`, as the curricula derive theirs) to the largest
budget in this process, scores each at each budget over the episodes it finished by then
(`envgen.scoring.summarize`) and prints, per budget, Spearman's rho between the two
seeds' scores and the overlap of their top-4 and bottom-4 (the groups the curricula train
on). The last line is JSON; `--out` keeps it, rewritten after every agent. `--rescore`
scores the agents a run kept in `--work-dir` at other budgets, untrained.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from envgen.agents.config import PPOConfig, add_rollout_arguments, model_preset, rollout_config
from envgen.agents.runlog import read_jsonl
from envgen.agents.seeding import derive_seed
from envgen.agents.threads import add_threads_argument, set_torch_threads
from envgen.agents.trainer import Trainer, crafter_vec_env_factory
from envgen.bench.options import add_count, add_model
from envgen.bench.rank_stats import budget_scores, rank_agreement
from envgen.envs.crafter.config import CrafterConfig
from envgen.files import write_json_atomic
from envgen.input_checks import comma_list, torch_device, writable_dir
from envgen.llm.conversation import PromptOptions
from envgen.loop.run_state import with_world_rules
from envgen.loop.world_designers import DESIGNERS, make_designer
from envgen.store.run_dir import EPISODES_LOG, RunDir

# the designers that need neither the LLM nor a policy
POOL_DESIGNERS = tuple(k for k, d in DESIGNERS.items() if not (d.llm or d.rollouts))


_int_list = comma_list(int, "give non-negative integers joined by commas", allowed=lambda v: v >= 0)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--budgets",
        type=_int_list,
        default=[5_000, 20_000, 50_000, 100_000],
        help="validation budgets in env steps, comma-separated; every agent trains to the "
        "largest and is scored at each (default 5000,20000,50000,100000)",
    )
    add_model(parser, ": the fastest on CPU; docs/agent.md")
    parser.add_argument(
        "--pool-designer",
        default="random",
        choices=POOL_DESIGNERS,
        help="who writes the pool: random (16 distinct uniformly sampled worlds, default) "
        "or heuristic (its 8 recipes, so a pool of 16 repeats each twice)",
    )
    add_count(parser, "--pool-size", 16, "environments", least=2)
    add_count(parser, "--pool-seed", 0, "designer's run seed", least=0)
    parser.add_argument(
        "--seeds",
        type=_int_list,
        default=[0, 1],
        help="the validation agents' two base seeds (default 0,1)",
    )
    add_count(parser, "--top", 4, "group size compared")
    add_rollout_arguments(parser)
    parser.add_argument(
        "--device", type=torch_device, default="cpu", help="torch device (default cpu)"
    )
    parser.add_argument(
        "--work-dir",
        type=Path,
        help=f"keep the agents' {EPISODES_LOG} here (default: a temporary directory)",
    )
    parser.add_argument(
        "--rescore",
        action="store_true",
        help="train nothing: score the agents a previous run kept in --work-dir at "
        "--budgets (each at most the steps they trained)",
    )
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    add_threads_argument(parser)


def train_agent(
    env: CrafterConfig, seed: int, args: argparse.Namespace, ppo_cfg: PPOConfig, run_dir: Path
) -> list[dict[str, Any]]:
    """Train one validation agent to the largest budget; its finished episodes."""
    trainer = Trainer(
        model_preset(args.model),
        ppo_cfg,
        seed,
        run_dir,
        args.device,
        env_factory=crafter_vec_env_factory(1),
    )
    try:
        trainer.train_until(max(args.budgets), [env], phase="validation")
    finally:
        trainer.close()
    return read_jsonl(RunDir(run_dir).episodes)


def kept_episodes(run_dir: Path, budget: int) -> list[dict[str, Any]]:
    """A kept agent's episodes, after checking it trained at least `budget` steps."""
    metrics = read_jsonl(RunDir(run_dir).metrics) if run_dir.is_dir() else []
    trained = metrics[-1]["step"] if metrics else 0
    if trained < budget:
        raise SystemExit(f"--rescore: {run_dir} trained {trained} steps, less than {budget}")
    return read_jsonl(RunDir(run_dir).episodes)


def report(
    args: argparse.Namespace,
    pool: Sequence[CrafterConfig],
    scores: Mapping[int, list[list[float]]],
    wall_s: float,
) -> dict[str, Any]:
    """The JSON result: per budget, agreement of the two seeds (once both are complete)."""
    first, second = (scores[s] for s in args.seeds)
    per_budget = []
    if len(first) == len(second) == len(pool):
        for j, budget in enumerate(args.budgets):
            a, b = [row[j] for row in first], [row[j] for row in second]
            per_budget.append({"budget": budget, **rank_agreement(a, b, args.top)})
    return {
        "per_budget": per_budget,
        "scores": {str(s): rows for s, rows in scores.items()},
        "pool": [c.to_dict() for c in pool],
        "settings": {
            **{k: getattr(args, k) for k in ("budgets", "model", "pool_designer", "pool_seed")},
            "seeds": args.seeds,
            "ppo": {k: getattr(args, k) for k in ("num_envs", "num_steps", "minibatches")},
            "torch_threads": args.torch_threads,
            "world_rules": "authors",
        },
        "rescored": args.rescore,
        "wall_s": round(wall_s, 1),
    }


def run(args: argparse.Namespace) -> int:
    if len(args.seeds) != 2 or args.seeds[0] == args.seeds[1]:
        raise SystemExit("--seeds: give two different base seeds, e.g. 0,1")
    if args.rescore and args.work_dir is None:
        raise SystemExit("--rescore: give the --work-dir of the run to score")
    if args.work_dir is not None:
        writable_dir(args.work_dir, "--work-dir")  # else a traceback once training started
    args.budgets = sorted(set(args.budgets))
    set_torch_threads(args.torch_threads)
    ppo_cfg = rollout_config(args, checkpoint_every=10**12)
    designer = make_designer(args.pool_designer, PromptOptions(), args.pool_seed)
    # the worlds as the curricula play them (world rules "authors")
    pool = [with_world_rules(c, "authors") for c in designer.generate(args.pool_size).configs]
    scores: dict[int, list[list[float]]] = {s: [] for s in args.seeds}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work_dir or Path(tmp)
        for i, env in enumerate(pool):
            for base in args.seeds:
                t0 = time.perf_counter()
                run_dir = work / f"seed-{base}" / f"env-{i:02d}"
                if args.rescore:
                    episodes = kept_episodes(run_dir, max(args.budgets))
                else:
                    seed = derive_seed(base, "validation", i)
                    episodes = train_agent(env, seed, args, ppo_cfg, run_dir)
                row = budget_scores(episodes, args.budgets)
                scores[base].append(row)
                took = time.perf_counter() - t0
                speed = "" if args.rescore else f" ({max(args.budgets) / took:.0f} steps/s)"
                print(
                    f"env {i + 1:2d}/{len(pool)} seed {base}: {len(episodes)} episodes, "
                    f"scores {' '.join(f'{s:.2f}' for s in row)} at {args.budgets}{speed}",
                    flush=True,
                )
                if args.out:
                    write_json_atomic(
                        args.out, report(args, pool, scores, time.perf_counter() - start)
                    )
    result = report(args, pool, scores, time.perf_counter() - start)
    for row in result["per_budget"]:
        rho = "undefined" if row["rho"] is None else f"{row['rho']:+.2f}"
        print(
            f"budget {row['budget']:>7}: rho {rho} (95% {row['rho_ci95']})  top-{args.top} "
            f"overlap {row['top_overlap']}/{args.top}  bottom-{args.top} overlap "
            f"{row['bottom_overlap']}/{args.top}  (chance {row['overlap_chance']})"
        )
    if args.out:
        write_json_atomic(args.out, result)
    print(json.dumps({"per_budget": result["per_budget"], "wall_s": result["wall_s"]}))
    return 0
