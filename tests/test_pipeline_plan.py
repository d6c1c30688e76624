"""Plans: every replication file expands; rows shared across tables share one hash."""

from pathlib import Path

import pytest
import yaml

from envgen.errors import ConfigError
from envgen.pipeline.plan import (
    RANDOM,
    REPORTED_ONLY,
    TRAIN,
    plan_table,
    read_replication_file,
)
from envgen.pipeline.profile import load_profile

PARAMS = yaml.safe_load(Path("params.yaml").read_text())
SMOKE = load_profile(PARAMS, "smoke")
TABLES = sorted(Path("replication").glob("*.yaml"))


CPU = load_profile(PARAMS, "cpu")


def plans(profile=SMOKE):
    """Every replication file planned under `profile`; a campaign's under the profile it
    is trained and collected with (cpu: SFL's rollouts do not fit smoke's cycles)."""
    return {
        p.stem: plan_table(
            read_replication_file(p), CPU if p.stem.startswith("campaign_") else profile
        )
        for p in TABLES
    }


def row(plan, name):
    return next(r for r in plan.rows if r.name == name)


def test_envgen_default_row_is_one_config_in_every_table():
    p = plans()
    hashes = {
        row(p["table1"], "PPO + EnvGen").config_hash,
        row(p["table2"], "Adaptive+Dynamic (EnvGen)").config_hash,
        row(p["table3"], "update every 0.12M (4 cycles)").config_hash,
        row(p["table4"], "0.48M EnvGen + 1.48M Crafter").config_hash,
        row(p["table6"], "4 envs per call").config_hash,
        row(p["table7"], "ratio 1:1").config_hash,
        row(p["obfuscation"], "PPO + EnvGen").config_hash,
    }
    assert len(hashes) == 1
    fixed = {row(p["table2"], "Fixed (no curriculum)").config_hash}
    fixed.add(row(p["table5"], "Qwen2.5-Coder-1.5B-Instruct (fixed, open local model)").config_hash)
    assert len(fixed) == 1


def test_row_kinds_and_job_counts():
    p = plans()
    assert row(p["table1"], "Random").kind == RANDOM
    assert row(p["table1"], "Human").kind == REPORTED_ONLY
    assert [(r.kind, r.game) for r in p["table8"].rows] == [(TRAIN, "heist")] * 2
    envgen = row(p["table1"], "PPO + EnvGen")
    assert envgen.kind == TRAIN and len(envgen.jobs) == len(SMOKE.seeds) * len(SMOKE.initial_sets)
    assert row(p["obfuscation"], "PPO + EnvGen").reported_as == {
        "table": "table1",
        "row": "PPO + EnvGen",
    }


def test_paper_profile_runs_three_sets_times_ten_seeds_for_llm_rows_only():
    p = plans(load_profile(PARAMS, "paper"))
    assert len(row(p["table1"], "PPO + EnvGen").jobs) == 30
    assert len(row(p["table1"], "PPO").jobs) == 10  # no LLM: the initial set is moot


def test_unknown_row_key_is_named(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("table: t\nrows:\n  - row: x\n    rnu: {}\n")
    with pytest.raises(ConfigError, match=r"t.rows\[x\].rnu"):
        plan_table(read_replication_file(path), SMOKE)


def test_bad_run_override_names_the_row_and_field(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("table: t\nrows:\n  - row: x\n    run: {n_cycle: 3}\n")
    with pytest.raises(ConfigError) as info:
        plan_table(read_replication_file(path), SMOKE)
    assert info.value.path == "t.rows[x].run.n_cycle"


def test_table8_under_smoke_is_tiny_heist_training_with_the_papers_step_ratio():
    plain, envgen = plans()["table8"].rows
    assert len(plain.jobs) == len(envgen.jobs) == 2  # games.heist: 2 seeds x 1 set
    for job in (*plain.jobs, *envgen.jobs):
        c = job.config
        assert (c.game, c.model, c.eval_episodes) == ("heist", "nature", 10)
        assert dict(c.ppo) == {"num_envs": 8, "num_steps": 64, "minibatches": 4}
        assert c.total_steps == 2560  # 25M x 0.0001, in whole 512-step rollouts
    c = envgen.jobs[0].config
    assert (c.n_cycles, c.llm_env_steps, c.orig_env_steps, c.final_steps) == (1, 512, 0, 2048)
    assert plain.jobs[0].config.final_steps == 2560  # original_only: all of it scored


def test_table8_under_paper_is_the_papers_heist_protocol():
    plain, envgen = plans(load_profile(PARAMS, "paper"))["table8"].rows
    assert len(plain.jobs) == len(envgen.jobs) == 10  # 100 test episodes x 10 seeds
    c = envgen.jobs[0].config
    assert (c.model, c.ppo, c.eval_episodes) == ("impala-small", (), 100)
    assert (c.llm_env_steps, c.final_steps, c.total_steps) == (5_000_000, 20_000_000, 25_000_000)
    assert plain.jobs[0].config.total_steps == 25_000_000


def test_fill_mode_serves_the_local_model_the_rows_ask_for():
    import copy

    from envgen.llm.client import LOCAL_MODEL
    from envgen.pipeline.recording import local_model_to_serve

    def plan(name, profile=SMOKE):
        return plan_table(read_replication_file(Path(f"replication/{name}.yaml")), profile)

    designer = PARAMS["profiles"]["smoke"]["llm_model"]
    assert designer != LOCAL_MODEL  # the smoke designer is not the bundled default
    assert local_model_to_serve([plan("table1")], None) == designer
    assert local_model_to_serve([plan("table1")], LOCAL_MODEL) == LOCAL_MODEL  # --model wins
    params = copy.deepcopy(PARAMS)
    params["profiles"]["smoke"]["llm_model"] = LOCAL_MODEL
    bundled = load_profile(params, "smoke")
    mixed = [plan("table1", bundled), plan("designers", bundled)]  # designers: the 1.5B
    with pytest.raises(ConfigError, match="2 local models.*one at a time with --model"):
        local_model_to_serve(mixed, None)
    assert local_model_to_serve([plan("campaign_cpu")], None) == LOCAL_MODEL  # no LLM row
