"""Execute the runs of one config, one seed each, as a cohort (`envgen.agents.cohort`).

The method is `original_only` (`RunConfig.cohort_eligible`), so the cohort walks
`runner.run_original_only`'s schedule. Each seed ends as a run alone ends: its final
metrics (`runner.crafter_final_metrics`), its provenance (with the cohort's size, the
seed's slot and its neighbours, and the groups and kernels when not the defaults),
sealed; the cohort's size and grouping are in each run's config, hence its hash. The
run store, verify, rerun and the report therefore see ordinary runs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envgen import numerics
from envgen.agents.cohort_trainer import CohortTrainer, crafter_cohort_env_factory
from envgen.errors import ConfigError, EnvGenError
from envgen.files import write_json_atomic
from envgen.games import game_spec
from envgen.loop.config import RunConfig, check_scored_phase
from envgen.loop.run_state import Run, RunOptions, with_world_rules
from envgen.loop.runner import crafter_final_metrics
from envgen.store.lifecycle import finish_run, start_session
from envgen.store.run_dir import RunDir, read_json


def execute_cohort(
    config: RunConfig,
    seeds: Sequence[int],
    runs_root: Path | str,
    options: RunOptions | None = None,
) -> list[Path]:
    """Run (or resume, or skip when finished) every seed of the cohort; their directories."""
    options = options or RunOptions()
    seeds = list(seeds)
    if config.cohort != len(seeds) or len(set(seeds)) != len(seeds):
        raise ConfigError(
            "cohort",
            f"a cohort of {config.cohort} needs {config.cohort} distinct seeds, got {seeds}",
        )
    if not config.cohort_eligible:
        raise ConfigError("cohort", "only original_only PPO runs of Crafter train in cohorts")
    numerics.enter(config.cpu_numerics, options.device)  # before any float is computed
    paths = [RunDir.of(runs_root, config.config_hash(), seed) for seed in seeds]
    for p in paths:  # killed after training, before sealing: seal
        if not p.finished and p.final_metrics.is_file():
            finish_run(p.root, read_json(p.final_metrics)["global_steps"])
    if all(p.finished for p in paths):
        return [p.root for p in paths]
    if any(p.finished for p in paths):
        done = [s for s, p in zip(seeds, paths, strict=True) if p.finished]
        raise EnvGenError(
            f"seeds {done} of this cohort are finished and the others are not; a cohort "
            "trains its seeds together: run the unfinished ones in a cohort of their own size"
        )
    if any(p.root.exists() for p in paths) and not options.resume:
        raise EnvGenError(
            f"{paths[0].root.parent} holds partial runs; pass --resume or remove them"
        )
    game = game_spec(config.game)
    check_scored_phase(config.final_steps, game.ppo_config(config.ppo).num_envs)
    started = time.monotonic()
    for p, seed in zip(paths, seeds, strict=True):
        p.write_config(config, seed)
    trainer = CohortTrainer(
        game.model_config(config.model, **config.gpu_options),
        game.ppo_config(config.ppo),
        seeds,
        [p.root for p in paths],
        options.device,
        env_factory=crafter_cohort_env_factory(options.num_workers),
        episode_record=game.episode_record,
        progress=options.progress,
        checkpoint_seconds=60 * options.checkpoint_minutes,
        groups=config.cohort_groups,
        kernels=config.cohort_kernels,
    )
    try:
        trainer.resume()
        for slot, p in enumerate(paths):
            cohort: dict[str, Any] = {"size": len(seeds), "slot": slot, "seeds": seeds}
            if config.cohort_groups > 1:  # pipelined (left out at 1, as in the hash)
                cohort["groups"] = config.cohort_groups
            if config.cohort_kernels != "eager":  # left out when eager, as in the hash
                cohort["kernels"] = config.cohort_kernels
            start_session(
                p.root,
                config.game,
                trainer.global_step,
                options.device,
                options.num_workers,
                cohort,
            )
        original = with_world_rules(game.original, config.original_world)
        total = config.total_steps
        trainer.train_until(max(total - config.final_steps, 0), [original], phase="pretrain")
        trainer.train_until(total, [original], phase="final")
        trainer.close_env()
        wall = time.monotonic() - started
        for seed, p in zip(seeds, paths, strict=True):
            run = Run(config, seed, p, trainer, options, llm=None, designer=None, game=game)  # type: ignore[arg-type]
            metrics = crafter_final_metrics(run, wall)
            write_json_atomic(p.final_metrics, metrics)
            finish_run(p.root, trainer.global_step)
    finally:
        trainer.close()
    return [p.root for p in paths]
