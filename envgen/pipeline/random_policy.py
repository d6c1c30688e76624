"""Table 1's Random row: a uniform random policy's Crafter score in stock Crafter.

Episodes are played in stock `crafter.Env` (the original game, length 10000) with its
chunk order made deterministic (`envgen.envs.crafter.determinism`: stock Crafter's
set-ordered chunks diverge run to run) and actions from a seeded generator. The run
directory holds them in crafter's stats.jsonl schema and final metrics shaped like a
trained run's.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import crafter
import numpy as np

from envgen.agents.runlog import JsonlLog, episode_record
from envgen.agents.seeding import derive_seed
from envgen.envs.crafter.determinism import make_deterministic
from envgen.files import write_json_atomic
from envgen.scoring import final_phase_summary
from envgen.store.lifecycle import finish_run, start_session
from envgen.store.run_dir import RunDir


def play_random(episodes: int, seed: int, run_dir: Path) -> Path:
    """Play `episodes` random episodes (world seeds derive from `seed`); returns `run_dir`."""
    started = time.monotonic()
    run_dir.mkdir(parents=True, exist_ok=True)
    run = RunDir(run_dir)
    run.provenance.unlink(missing_ok=True)  # a killed attempt starts over
    start_session(run_dir, "crafter", 0)
    run.episodes.unlink(missing_ok=True)  # a killed attempt restarts from its first episode
    log = JsonlLog(run.episodes)
    rng = np.random.default_rng(derive_seed(seed, "random_actions"))
    records, step = [], 0
    try:
        for index in range(episodes):
            env = make_deterministic(crafter.Env(seed=derive_seed(seed, "random_world", index)))
            env.reset()
            done, ret, length, info = False, 0.0, 0, {}
            while not done:
                _, reward, done, info = env.step(int(rng.integers(env.action_space.n)))
                ret, length = ret + reward, length + 1
            step += length
            episode = {"length": length, "return": ret, "config_index": 0}
            episode["achievements"] = info["achievements"]
            records.append(episode_record(episode, step, "final"))
            log.write(records[-1])
    finally:
        log.close()
    write_json_atomic(run.final_metrics, random_metrics(records, seed, started))
    finish_run(run_dir, step)
    return run_dir


def random_metrics(records: list[dict[str, Any]], seed: int, started: float) -> dict[str, Any]:
    """The final metrics of a random run (no training, no LLM): every episode is of the
    scored phase, which starts at step 0."""
    return {
        "config_hash": None,
        "seed": seed,
        "method": "random",
        **final_phase_summary(records),
        "global_steps": records[-1]["step"],
        "llm_calls": 0,
        "wall_s": round(time.monotonic() - started, 1),
    }
