"""Execute one run: EnvGen, its Fixed variant, the original-game baseline, or a curriculum.

Per cycle (docs/paper.md, "The method in four steps") the designer writes or adapts N
environments, the agent trains T_LLM-Env steps in them and T_Orig-Env in the original
game, and is evaluated there without updates; the per-skill feedback goes back to the
designer. Then T_final steps in the original game score Crafter; Heist tests the final
agent. Every phase ends at an absolute global step, so a resumed run (checkpoint,
per-cycle files, cached replies) walks the same schedule and skips what is done. Game
specifics come from `envgen.games`; the run is sealed after its final metrics.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from envgen import numerics
from envgen.agents.heist_evaluate import play_test_episodes
from envgen.agents.runlog import JsonlLog, read_jsonl
from envgen.agents.seeding import derive_seed
from envgen.agents.trainer import Trainer, crafter_vec_env_factory
from envgen.envs.heist.metrics import summary as heist_summary
from envgen.errors import EnvGenError
from envgen.files import write_json_atomic
from envgen.games import game_spec
from envgen.llm.cache import CachedLLM
from envgen.llm.conversation import AUTO, PromptOptions, auto_context
from envgen.llm.slots import run_id, summarize_calls
from envgen.loop.config import RunConfig, check_scored_phase
from envgen.loop.curricula import run_curriculum
from envgen.loop.learnability import RolloutOutcome
from envgen.loop.level_rollout import rollout_success
from envgen.loop.run_state import CallLog, Run, RunOptions
from envgen.loop.world_designers import DESIGNERS, Stats, make_designer
from envgen.results_version import version_key
from envgen.scoring import final_phase_summary
from envgen.store.lifecycle import finish_run, start_session
from envgen.store.run_dir import RunDir, read_json


# --- the methods -----------------------------------------------------------------------
def run_original_only(run: Run) -> None:
    """All steps in the original game; the last `final_steps` are scored."""
    total, original = run.config.total_steps, run.original
    run.trainer.train_until(max(total - run.config.final_steps, 0), [original], phase="pretrain")
    run.trainer.train_until(total, [original], phase="final")


def run_envgen(run: Run) -> None:
    """EnvGen (adaptive) and Fixed (environments generated once, never adapted)."""
    cfg, step = run.config, 0
    adaptive = cfg.method == "envgen"
    configs: list[Any] = []
    stats: Stats | None = None
    for cycle in range(1, cfg.n_cycles + 1):
        if cycle == 1 or adaptive:
            configs = ask_designer(run, cycle, stats)
        # SFL's or PLR's rollouts (asking the designer) count in the cycle's budget
        step += cfg.llm_env_steps - cfg.curation_steps_per_cycle
        run.trainer.train_until(step, configs, phase=f"llm{cycle}")
        step += cfg.orig_env_steps
        run.trainer.train_until(step, [run.original], phase=f"orig{cycle}")
        if adaptive:
            stats = cycle_evaluation(run, cycle)
    run.trainer.train_until(step + cfg.final_steps, [run.original], phase="final")


def ask_designer(run: Run, cycle: int, stats: Stats | None) -> list[Any]:
    """Cycle 1 generates, later cycles adapt; writes the environments and feedback."""
    assert run.designer is not None
    cycle_dir = run.paths.cycle(cycle)
    first_new = len(run.designer.messages)
    if cycle == 1 and run.designer.results:
        parsed = run.designer.results[0]  # asked before the run started (execute_run)
    elif cycle == 1:  # designers that play the policy: the first call rolls out the initial one
        parsed = run.designer.generate(run.config.envs_per_call)
    else:
        assert stats is not None
        parsed = run.designer.adapt(stats)
        feedback = run.designer.messages[first_new].content
        if not cycle_dir.feedback.is_file():
            cycle_dir.root.mkdir(parents=True, exist_ok=True)
            cycle_dir.feedback.write_text(feedback, encoding="utf-8")
    record: dict[str, Any] = {
        "configs": [c.to_dict() for c in parsed.configs],
        "warnings": parsed.warnings,
        "repaired": parsed.repaired,
        **run.designer.cycle_record(),
    }
    write_json_atomic(cycle_dir.environments, record)
    run.save_llm_calls()
    return run.designed(parsed.configs)


def curation_rollouts(run: Run, cycle: int, candidates: Sequence[Any]) -> RolloutOutcome:
    """The current policy rolled out (`level_rollout.rollout_success`) on a curating
    designer's candidates of `cycle`, as the config's `RolloutBudget` says, in the worlds
    as played, seeded by (run seed, cycle). Once: a resumed run, whose policy has moved
    on, reads the cycle's rollout file (`CycleDir.rollouts`).
    """
    cfg, kind, budget = run.config, run.config.designer, run.config.rollouts
    assert budget is not None
    path = run.paths.cycle(cycle).rollouts(kind)
    worlds = [c.to_dict() for c in candidates]
    if path.is_file():
        saved = read_json(path)
        if saved["candidates"] != worlds:
            raise EnvGenError(
                f"{path}: its candidates are not the ones this run draws at cycle {cycle}; "
                "the file belongs to another run or code: remove the run directory and rerun"
            )
        return RolloutOutcome.from_dict(saved)
    ppo = run.game.ppo_config(cfg.ppo) if budget.value_loss else None  # PLR's GAE
    outcome = rollout_success(
        run.trainer.model,
        run.designed(candidates),
        budget.envs,
        budget.steps,
        derive_seed(run.seed, f"{kind}-rollout-envs", cycle),
        derive_seed(run.seed, f"{kind}-rollout-actions", cycle),
        crafter_vec_env_factory(run.options.num_workers),
        run.options.device,
        None if ppo is None else (ppo.gamma, ppo.gae_lambda),
    )
    assert outcome.env_steps == cfg.curation_steps_per_cycle
    write_json_atomic(
        path, {"candidates": worlds, "step": run.trainer.global_step, **outcome.to_dict()}
    )
    return outcome


def cycle_evaluation(run: Run, cycle: int) -> dict[str, tuple[int, int]]:
    """Evaluate in the original game after a cycle (once; a resumed run reads the file);
    returns the feedback: per skill, the authors' rounded mean and std over the
    `feedback_evals` evaluation runs (`envgen.agents.evaluate`)."""
    path = run.paths.cycle(cycle).evaluation
    if path.is_file():
        result = read_json(path)
    else:
        result = run.game.evaluate(
            run.trainer.model,
            derive_seed(run.seed, "evaluation", cycle),
            run.config.eval_episodes,
            run.options.device,
            run.options.num_workers,
            run.original,
            run.config.feedback_evals,
        )
        result["step"] = run.trainer.global_step
        write_json_atomic(path, result)
    skills = game_spec(run.config.game).design.skills()
    return {s: tuple(result["feedback"][s]) for s in skills}


METHODS: dict[str, Callable[[Run], None]] = {
    "envgen": run_envgen,
    "fixed": run_envgen,
    "original_only": run_original_only,
    "easy_to_hard": run_curriculum,
    "adversarial": run_curriculum,
}


# --- one run, end to end -------------------------------------------------------------------
def designer_options(config: RunConfig, structured: str) -> PromptOptions:
    """How this run's designer asks: `config`'s LLM settings and the backend's
    structured-output dialect. A run whose LLM never adapts sends no history, so its
    history setting is not applied ("auto" needs a context an API model does not state)."""
    history = config.llm_history_cycles if config.llm_adapts else 0
    return PromptOptions(
        game=config.game,
        initial_set=config.initial_set,
        obfuscate=config.obfuscated,
        structured=structured,
        history_cycles=history,
        context_tokens=auto_context(config.llm_model) if history == AUTO else None,
        temperature=config.llm_temperature,
        redraw_repeats=config.llm_redraw_repeats,
    )


def execute_run(
    config: RunConfig,
    seed: int,
    runs_root: Path | str,
    llm: CachedLLM | None = None,
    options: RunOptions | None = None,
) -> Path:
    """Run (or resume, or skip if finished) one (config, seed); returns its directory.

    `llm` (whose model must be the config's `llm_model`) is required when the designer is
    the LLM; its first reply comes before anything is written, so a run that cannot get
    it leaves no directory behind.
    """
    options = options or RunOptions()
    paths = RunDir.of(runs_root, config.config_hash(), seed)
    if paths.finished:
        return paths.root
    if paths.final_metrics.is_file():  # killed after training, before sealing
        finish_run(paths.root, read_json(paths.final_metrics)["global_steps"])
        return paths.root
    game = game_spec(config.game)
    if game.rules.scored_in_training:
        check_scored_phase(config.final_steps, game.ppo_config(config.ppo).num_envs)
    numerics.enter(config.cpu_numerics, options.device)  # before any float is computed
    if paths.root.exists() and not options.resume:
        raise EnvGenError(
            f"{paths.root} holds a partial run; pass --resume to continue it or remove it"
        )
    call_log, designer = None, None
    if config.uses_llm:
        if llm is None:
            raise ValueError(f"method {config.method!r} needs an LLM (cache replay at least)")
        if llm.backend.model != config.llm_model:
            raise ValueError(
                f"LLM backend model {llm.backend.model!r} differs from the run's "
                f"llm_model {config.llm_model!r}"
            )
        call_log = CallLog(llm, run_id(config.config_hash(), seed))
    if config.uses_designer:
        structured = llm.backend.structured if llm is not None else "off"
        designer = make_designer(
            config.designer,
            designer_options(config, structured),
            seed,
            config.designer_settings,
            llm=call_log,
            # the current policy's rollouts: `run` is bound below, before any call
            rollout=lambda cycle, worlds: curation_rollouts(run, cycle, worlds),
        )
        if config.method in ("envgen", "fixed") and not DESIGNERS[config.designer].rollouts:
            designer.generate(config.envs_per_call)  # fails before any file is written

    started = time.monotonic()
    paths.write_config(config, seed)
    torch.manual_seed(derive_seed(seed, "torch"))
    trainer = Trainer(
        game.model_config(config.model, **config.gpu_options),
        game.ppo_config(config.ppo),
        seed,
        paths.root,
        options.device,
        env_factory=game.vec_env_factory(options.num_workers),
        episode_record=game.episode_record,
        summarize=game.summarize,
        progress=options.progress,
        agent=config.agent,
        checkpoint_seconds=60 * options.checkpoint_minutes,
    )
    run = Run(config, seed, paths, trainer, options, call_log, designer, game)
    try:
        trainer.resume()
        start_session(
            paths.root,
            config.game,
            trainer.global_step,
            options.device,
            options.num_workers,
            key=version_key(config.game, config.llm_adapts),
        )
        METHODS[config.method](run)
        trainer.close_env()
        run.save_llm_calls()
        metrics = FINAL_METRICS[config.game](run, time.monotonic() - started)
        write_json_atomic(paths.final_metrics, metrics)
        finish_run(paths.root, trainer.global_step)
    finally:
        trainer.close()
    return paths.root


def final_metrics(run: Run, wall_s: float, scored: dict[str, Any]) -> dict[str, Any]:
    """The run's final metrics: the game's `scored` fields among those every game writes
    (SFL's and PLR's rollout steps, and the run's env steps in all, only for them)."""
    curation = run.config.curation_steps
    return {
        "config_hash": run.config.config_hash(),
        "seed": run.seed,
        "method": run.config.method,
        **scored,
        "global_steps": run.trainer.global_step,
        **(
            {"curation_steps": curation, "env_steps": run.trainer.global_step + curation}
            if curation
            else {}
        ),
        "episodes_cut": run.trainer.counters.episodes_cut,
        "llm_calls": len(run.llm.calls) if run.llm else 0,
        "llm_replay": summarize_calls(run.llm.calls) if run.llm else None,
        "wall_s": round(wall_s, 1),
    }


def crafter_final_metrics(run: Run, wall_s: float) -> dict[str, Any]:
    """Score and reward over the final phase's episodes, first unlocks, LLM accounting."""
    scored = final_phase_summary(read_jsonl(run.paths.episodes))
    if scored is None:
        raise EnvGenError(
            f"{run.paths.root}: no episode finished in the scored phase; "
            "raise final_steps (episodes last ~100-10000 steps)"
        )
    return final_metrics(run, wall_s, scored)


def heist_final_metrics(run: Run, wall_s: float) -> dict[str, Any]:
    """The final agent tested on plain Heist: success rate (= score), reward, sub-goals,
    over `eval_episodes` test episodes (the paper: 100) seeded by the run seed, kept in
    `RunDir.test_episodes` (docs/paper.md, "Agent and training protocol")."""
    records = play_test_episodes(
        run.trainer.model,
        derive_seed(run.seed, "test"),
        run.config.eval_episodes,
        run.options.device,
    )
    run.paths.test_episodes.unlink(missing_ok=True)
    log = JsonlLog(run.paths.test_episodes)
    for record in records:
        log.write(record)
    log.close()
    return final_metrics(run, wall_s, {"game": run.config.game, **heist_summary(records)})


# Explicit registry: RunConfig.game -> its final metrics (`RunDir.final_metrics`).
FINAL_METRICS: dict[str, Callable[[Run, float], dict[str, Any]]] = {
    "crafter": crafter_final_metrics,
    "heist": heist_final_metrics,
}
