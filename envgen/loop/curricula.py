"""The curriculum baselines of Table 2 (docs/paper.md, "Baselines and ablations").

- Easy-to-hard: the LLM writes 16 environments, each is ranked by a fresh validation
  agent's Crafter score, and the agent trains on the 4 easiest, then the next 4, one
  group per cycle.
- Adversarial: the same start, but the 4 hardest; every later cycle the LLM writes 16
  new ones (the next initial set), and the agent trains on the 4 it scores lowest in.

Each cycle, the paper's 0.24M block, is split as EnvGen's (T_LLM-Env, then T_Orig-Env
in Crafter), so both methods see as much of the original game (docs/loop.md).
"""

from __future__ import annotations

import dataclasses

from envgen.agents.evaluate import evaluate_policy
from envgen.agents.runlog import read_jsonl
from envgen.agents.seeding import derive_seed
from envgen.agents.trainer import Trainer, crafter_vec_env_factory
from envgen.envs.crafter.config import CrafterConfig
from envgen.files import write_json_atomic
from envgen.loop.run_state import Run
from envgen.loop.world_designers import make_designer
from envgen.scoring import summarize
from envgen.store.run_dir import RunDir, read_json


def run_curriculum(run: Run) -> None:
    cfg, step, k = run.config, 0, run.config.envs_per_call
    pool = generate_pool(run, set_offset=0)
    order = rank_by_validation_agents(run, pool)  # pool indices, easiest first
    for cycle in range(1, cfg.n_cycles + 1):
        if cfg.method == "easy_to_hard":
            groups = [order[j : j + k] for j in range(0, len(order), k)]
            chosen = groups[(cycle - 1) % len(groups)]
        elif cycle == 1:
            chosen = order[-k:]
        else:
            pool = generate_pool(run, set_offset=cycle - 1)
            chosen = hardest_for_agent(run, pool, cycle)
        selected = [pool[i] for i in chosen]
        write_json_atomic(
            run.paths.cycle(cycle).environments,
            {"configs": [c.to_dict() for c in selected], "pool_indices": chosen},
        )
        step += cfg.llm_env_steps
        run.trainer.train_until(step, selected, phase=f"llm{cycle}")
        step += cfg.orig_env_steps
        run.trainer.train_until(step, [run.original], phase=f"orig{cycle}")
    run.trainer.train_until(step + cfg.final_steps, [run.original], phase="final")


def generate_pool(run: Run, set_offset: int) -> list[CrafterConfig]:
    """`curriculum_pool` environments from a fresh conversation (initial set + offset)."""
    assert run.designer is not None
    options = dataclasses.replace(
        run.designer.options, initial_set=run.config.initial_set + set_offset
    )
    designer = make_designer(
        run.config.designer, options, run.seed, run.config.designer_settings, llm=run.llm
    )
    parsed = designer.generate(run.config.curriculum_pool)
    run.save_llm_calls()
    return run.designed(parsed.configs)


def rank_by_validation_agents(run: Run, pool: list[CrafterConfig]) -> list[int]:
    """Pool indices sorted by a fresh validation agent's Crafter score, highest first:
    each trains `validation_steps` in one environment. Scores are saved as they come, so
    a resumed run trains only the agents not scored yet."""
    path = run.paths.validation
    scores: dict[str, float] = read_json(path) if path.is_file() else {}
    for i, env in enumerate(pool):
        if str(i) in scores:
            continue
        agent_dir = run.paths.validation_agents / f"env-{i:02d}"
        trainer = Trainer(
            run.trainer.model_cfg,
            run.trainer.ppo_cfg,
            derive_seed(run.seed, "validation", i),
            agent_dir,
            run.options.device,
            env_factory=crafter_vec_env_factory(run.options.num_workers),
        )  # no wall-clock checkpoints: they would stay inside the run (its manifest, archive)
        try:
            trainer.resume()
            trainer.train_until(run.config.validation_steps, [env], phase="validation")
        finally:
            trainer.close()
        episodes = read_jsonl(RunDir(agent_dir).episodes)
        scores[str(i)] = summarize(episodes)["score"] if episodes else 0.0
        write_json_atomic(path, scores)
    return sorted(range(len(pool)), key=lambda i: -scores[str(i)])


def hardest_for_agent(run: Run, pool: list[CrafterConfig], cycle: int) -> list[int]:
    """The `envs_per_call` pool indices where the current agent scores lowest, evaluated
    without updates, seeds from (run seed, cycle, index)."""
    path = run.paths.cycle(cycle).adversarial_test
    if path.is_file():
        scores = read_json(path)
    else:
        scores = [
            evaluate_policy(
                run.trainer.model,
                derive_seed(run.seed, "evaluation", 1000 * cycle + i),
                num_seeds=run.config.eval_episodes,
                device=run.options.device,
                env_factory=crafter_vec_env_factory(run.options.num_workers),
                config=env,
            )["score_mean"]
            for i, env in enumerate(pool)
        ]
        write_json_atomic(path, scores)
    return sorted(range(len(pool)), key=lambda i: scores[i])[: run.config.envs_per_call]
