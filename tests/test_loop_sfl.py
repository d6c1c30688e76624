"""The SFL designer (Sampling For Learnability over domain randomization's worlds):
its score and choice by hand, its seeding, a bandit of worlds of known success, and tiny
real runs in which its rollouts count in the step budget and a killed run resumes to the
same worlds (docs/loop.md, "SFL")."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import types
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from envgen.campaign.progress import job_states
from envgen.campaign.registry import campaigns
from envgen.campaign.run import load_campaign
from envgen.envs.crafter.config import CrafterConfig
from envgen.errors import ConfigError
from envgen.evidence.derive import rederived
from envgen.llm.conversation import PromptOptions
from envgen.llm.parse import settings_key
from envgen.loop.config import RunConfig
from envgen.loop.learnability import RolloutOutcome, learnability, top_n
from envgen.loop.runner import execute_run
from envgen.loop.world_designers import RandomDesigner, SFLDesigner, SFLSettings, sample_worlds
from envgen.pipeline.job_status import results_versions
from envgen.report.world_diversity import diversity, run_cycles, sfl_choices
from envgen.scoring import ACHIEVEMENTS
from envgen.store.run_dir import RunDir
from tests.test_loop import TINY, TINY_PPO, stable

K = len(ACHIEVEMENTS)  # 22
OPTIONS = PromptOptions(game="crafter", initial_set=0)


# --- the score and the choice, by hand ----------------------------------------------------
def test_learnability_sums_p_times_one_minus_p_over_the_achievements():
    rates = np.array(
        [
            [0.5] * K,  # every achievement half the time: the most learnable, 22 / 4
            [0.0] * (K // 2) + [1.0] * (K - K // 2),  # always or never: nothing to learn
            [0.2] * K,  # 22 x 0.16
            [0.5] + [0.0] * (K - 1),  # one achievement at 0.5
            [0.9, 0.1, 0.25] + [0.0] * (K - 3),  # 0.09 + 0.09 + 0.1875
        ]
    )
    assert learnability(rates) == pytest.approx([5.5, 0.0, 3.52, 0.25, 0.3675])


def test_learnability_refuses_percentages():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        learnability(np.full((1, K), 50.0))  # the evaluation's percent, not a share


def test_top_n_takes_the_highest_and_breaks_ties_by_the_lower_index():
    scores = [1.0, 3.0, 3.0, 2.0, 3.0, 0.5]
    assert top_n(scores, 1) == [1]
    assert top_n(scores, 3) == [1, 2, 4]
    assert top_n(scores, 4) == [1, 2, 4, 3]
    assert top_n([0.0] * 6, 4) == [0, 1, 2, 3]  # no signal: the first sampled
    with pytest.raises(ValueError):
        top_n(scores, 7)


# --- the designer with a known rollout ---------------------------------------------------
def wood_success(world) -> float:
    """The bandit's known success probability of a world: its starting wood / 9 (domain
    randomization draws wood uniformly from 0..9)."""
    return dict(world.inventory).get("wood", 0) / 9


def bandit_rollout(seed: int, episodes: int = 8):
    """A rollout that plays `episodes` Bernoulli episodes per world: achievement 0
    succeeds with probability `wood_success`, the others never."""

    def rollout(cycle: int, worlds: Sequence) -> RolloutOutcome:
        rng = np.random.default_rng([seed, cycle])
        rates = []
        for world in worlds:
            hits = rng.random(episodes) < wood_success(world)
            rates.append((float(hits.mean()),) + (0.0,) * (K - 1))
        return RolloutOutcome(tuple(rates), (episodes,) * len(worlds), len(worlds) * episodes)

    return rollout


def sfl(seed: int, noise: int | None = None) -> SFLDesigner:
    """SFL of run seed `seed` on the bandit, its episodes drawn from `noise` (default the
    seed)."""
    rollout = bandit_rollout(seed if noise is None else noise)
    return SFLDesigner(OPTIONS, seed, SFLSettings(16, 2, 1024), rollout=rollout)


def worlds_of(designer, cycles: int = 3) -> list[list[dict]]:
    """The designer's worlds of `cycles` cycles (generate, then adapt)."""
    stats = {s: (50, 5) for s in ACHIEVEMENTS}
    replies = [designer.generate(4)] + [designer.adapt(stats) for _ in range(cycles - 1)]
    return [[c.to_dict() for c in r.configs] for r in replies]


def test_same_seed_same_worlds_and_its_candidates_start_with_dr_worlds():
    assert worlds_of(sfl(3)) == worlds_of(sfl(3))
    assert worlds_of(sfl(3, noise=0)) != worlds_of(sfl(4, noise=0))  # other candidates
    # one stream: SFL's first 4 candidates of a cycle are the 4 worlds DR trains on
    assert sample_worlds(3, 0, 2, 16)[:4] == sample_worlds(3, 0, 2, 4)
    dr = RandomDesigner(OPTIONS, 3).generate(4).configs
    assert [settings_key(c) for c in dr] == [
        settings_key(CrafterConfig.from_dict(w)) for w in sample_worlds(3, 0, 1, 4)
    ]


def test_each_cycle_rolls_out_domain_randomizations_candidates_of_that_cycle():
    seen: dict[int, list[str]] = {}
    rollout = bandit_rollout(3)

    def recording(cycle: int, worlds: Sequence) -> RolloutOutcome:
        seen[cycle] = [settings_key(w) for w in worlds]
        return rollout(cycle, worlds)

    designer = SFLDesigner(OPTIONS, 3, SFLSettings(16, 2, 1024), rollout=recording)
    worlds_of(designer, 3)
    for cycle in (1, 2, 3):
        drawn = [CrafterConfig.from_dict(w) for w in sample_worlds(3, 0, cycle, 16)]
        assert seen[cycle] == [settings_key(w) for w in drawn]
    assert seen[1] != seen[2] != seen[3]


def test_the_chosen_worlds_are_the_most_learnable_candidates():
    designer = sfl(5)
    worlds_of(designer, 2)
    for curation, reply in zip(designer.curations, designer.results, strict=True):
        assert list(curation.chosen) == top_n(curation.scores, 4)
        best = sorted(curation.scores, reverse=True)[:4]
        assert best == [curation.scores[i] for i in curation.chosen]
        kept = [curation.outcome.rates[i][0] for i in curation.chosen]
        assert [round(p * (1 - p), 9) for p in kept] == [
            round(curation.scores[i], 9) for i in curation.chosen
        ]
        assert len(reply.configs) == 4


def test_bandit_of_worlds_sfl_concentrates_near_one_half_and_dr_does_not():
    """Worlds of known success p (starting wood / 9): SFL's choices, from 8 Bernoulli
    episodes per candidate, sit near p = 0.5; domain randomization's spread over 0..1."""
    sfl_p, dr_p = [], []
    for seed in range(10):
        for designer, chosen in ((sfl(seed), sfl_p), (RandomDesigner(OPTIONS, seed), dr_p)):
            worlds_of(designer)
            chosen += [wood_success(c) for reply in designer.results for c in reply.configs]
    sfl_gap, dr_gap = (float(np.mean(np.abs(np.array(p) - 0.5))) for p in (sfl_p, dr_p))
    assert len(sfl_p) == len(dr_p) == 120
    # |p - 0.5| of uniform 0..9 / 9 is 0.28 on average; measured: SFL 0.15, DR 0.27
    assert sfl_gap < 0.2 < dr_gap, (sfl_gap, dr_gap)
    middle = [float(np.mean([0.3 <= p <= 0.7 for p in ps])) for ps in (sfl_p, dr_p)]
    assert middle[0] > 0.7 and middle[1] < 0.5, middle  # measured 0.78 and 0.4 (uniform)
    assert np.mean([0 < p < 1 for p in sfl_p]) == 1.0  # never a world always or never won


# --- the config --------------------------------------------------------------------------
def test_cpu_campaign_curation_is_a_small_stated_share_of_the_budget():
    config = RunConfig(designer="sfl")
    assert config.curation_steps_per_cycle == 16 * 2 * 1024
    assert config.curation_steps == 131_072
    assert config.total_steps == 1_960_000
    assert 0.05 < config.curation_steps / config.total_steps < 0.07  # 6.7 %


def test_sfl_fields_stay_out_of_other_designers_hashes_and_are_refused_there():
    assert "sfl_candidates" not in RunConfig(designer="random").to_dict()
    assert "sfl_candidates" in RunConfig(designer="sfl").to_dict()
    with pytest.raises(ConfigError, match="designer: sfl only"):
        RunConfig(designer="random", sfl_candidates=32)
    with pytest.raises(ConfigError, match="method envgen"):
        RunConfig(designer="sfl", method="fixed")
    with pytest.raises(ConfigError, match="leaving none to train"):
        RunConfig(designer="sfl", llm_env_steps=32_768)
    with pytest.raises(ConfigError, match="cannot give 4 worlds"):
        RunConfig(designer="sfl", sfl_candidates=3)


# --- tiny real runs ----------------------------------------------------------------------
SFL_TINY = TINY.replace(
    designer="sfl",
    n_cycles=2,
    llm_env_steps=3072,  # 2,560 of rollouts + 512 of training in the chosen worlds
    sfl_candidates=5,
    sfl_rollout_envs=2,
    sfl_rollout_steps=256,
    ppo=tuple(sorted({**TINY_PPO, "epochs": 1}.items())),
)


@pytest.fixture(scope="module")
def sfl_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return execute_run(SFL_TINY, 0, tmp_path_factory.mktemp("sfl"), llm=None)


def curation_metrics(root: Path, cycles: int, per_cycle: int) -> dict:
    """A curating run's final metrics, checked: `cycles` x `per_cycle` rollout steps,
    counted in its env steps, and the same two numbers as verify derives them from the
    rollout files (SFL's and PLR's tiny runs)."""
    metrics = json.loads((root / "final_metrics.json").read_text())
    assert metrics["curation_steps"] == cycles * per_cycle
    assert metrics["env_steps"] == metrics["global_steps"] + metrics["curation_steps"]
    derived = rederived(root, metrics)
    assert (derived["curation_steps"], derived["env_steps"]) == (
        metrics["curation_steps"],
        metrics["env_steps"],
    )
    return metrics


@pytest.mark.slow
def test_curation_steps_count_in_the_run_budget(sfl_run: Path):
    per_cycle = 5 * 2 * 256
    metrics = curation_metrics(sfl_run, 2, per_cycle)
    rollout = TINY_PPO["num_envs"] * TINY_PPO["num_steps"]
    # training took the budget less the rollouts (up to the trainer's whole rollouts)
    budget = SFL_TINY.total_steps
    assert budget <= metrics["env_steps"] < budget + rollout
    for cycle in (1, 2):
        cycle_dir = sfl_run / "cycles" / f"cycle-{cycle:02d}"
        rollouts = json.loads((cycle_dir / "sfl_rollouts.json").read_text())
        assert rollouts["env_steps"] == per_cycle and len(rollouts["candidates"]) == 5
        assert min(rollouts["episodes"]) >= 1  # 256 steps end a near-random agent's episodes
        chosen = json.loads((cycle_dir / "environments.json").read_text())["sfl"]["chosen"]
        assert len(chosen) == 4


@pytest.mark.slow
def test_killed_sfl_run_resumes_to_the_same_worlds(sfl_run: Path, tmp_path: Path):
    config_path = tmp_path / "sfl.yaml"
    config_path.write_text(json.dumps(SFL_TINY.to_dict()))
    root = tmp_path / "runs"
    command = [sys.executable, "-m", "envgen.cli", "run", str(config_path), "--seed", "0"]
    command += ["--runs-root", str(root)]
    paths = RunDir.of(root, SFL_TINY.config_hash(), 0)
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while not paths.cycle(2).rollouts("sfl").is_file():
        assert proc.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not paths.finished
    done = subprocess.run([*command, "--resume"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    for cycle in (1, 2):
        for name in ("sfl_rollouts.json", "environments.json"):
            ours = json.loads((paths.cycle(cycle).root / name).read_text())
            theirs = json.loads((sfl_run / "cycles" / f"cycle-{cycle:02d}" / name).read_text())
            assert ours == theirs, (cycle, name)
    resumed = json.loads(paths.final_metrics.read_text())
    uninterrupted = json.loads((sfl_run / "final_metrics.json").read_text())
    assert stable(resumed) == stable(uninterrupted)


# --- the registered campaign -------------------------------------------------------------
def test_campaign_sfl_plans_both_arms_on_its_seeds_and_counts_sfl_training_steps(tmp_path):
    """`envgen campaign status sfl`'s progress is training steps: an SFL run's trainer
    stops 131,072 steps (its rollouts) before domain randomization's."""
    campaign = campaigns()["sfl"]
    plan, _, _ = load_campaign(campaign.request(Path("params.yaml"), tmp_path))
    states = job_states(plan, tmp_path, results_versions(), False)
    totals = {(s.row, s.job.seed): s.total_steps for s in states}
    assert sorted({seed for _, seed in totals}) == list(range(36, 56))
    dr = "Domain randomization: EnvGen schedule"
    assert {totals[("SFL: EnvGen schedule", 36)], totals[(dr, 36)]} == {
        1_960_000 - 131_072,
        1_960_000,
    }
    assert totals[("SFL: EnvGen schedule", 36)] == 1_828_928
    assert [j.key[0] for j in (plan.rows[0].jobs[0], plan.rows[1].jobs[0])] == [
        "544657aa9df0",  # docs/campaign_sfl.md names both hashes
        "7b838eba3c35",
    ]


# --- D2 of docs/campaign_sfl.md: the worlds an arm trained on -----------------------------
def world(biome: str, wood: int) -> dict:
    settings = CrafterConfig().to_dict()["environment_settings"]  # stock Crafter's
    return {
        "environment_settings": {**settings, "target_biome": biome},
        "inventory_settings": {"wood": wood} if wood else {},
        "length": 1024,
        "purpose": f"any words {biome} {wood}",  # not part of a world's identity
    }


def test_diversity_counts_distinct_worlds_changes_and_knob_coverage_by_hand():
    a, b, c = world("grassland", 0), world("mountain", 3), world("beaches", 9)
    b_again = {**b, "purpose": "said otherwise", "length": 10000}
    run1 = [[a, b], [b_again, c]]  # cycle 2 keeps b: 1 of 2 changed
    run2 = [[a, a], [a, a]]  # never changes, one world
    run3 = [[a], [b]]  # 1 of 1 changed
    d = diversity([run1, run2, run3])
    assert (d["runs"], d["worlds"], d["distinct"]) == (3, 10, 3)
    assert d["distinct_per_run"] == {"mean": 2.0, "min": 1, "max": 3}
    # pooled over (run, cycle) pairs as registered: 2 of 5, not the runs' mean share 0.5
    assert d["changed_between_cycles"] == pytest.approx((1 + 0 + 1) / (2 + 2 + 1))
    biome = d["coverage"]["settings"]["target_biome"]
    assert biome == {"natural": 0.0, "grassland": 6 / 10, "mountain": 3 / 10, "beaches": 1 / 10}
    assert d["coverage"]["inventory"]["wood"] == {"mean": (3 + 3 + 9 + 3) / 10, "any": 4 / 10}
    assert d["coverage"]["inventory"]["iron"] == {"mean": 0.0, "any": 0.0}


@pytest.mark.slow
def test_sfl_choices_read_what_the_run_chose(sfl_run: Path):
    cycles = run_cycles(sfl_run)
    assert [len(c) for c in cycles] == [4, 4]
    choices = sfl_choices(sfl_run)
    for cycle, choice in enumerate(choices, start=1):
        sfl = json.loads((sfl_run / f"cycles/cycle-{cycle:02d}/environments.json").read_text())
        chosen = sfl["sfl"]["chosen"]
        assert choice["chosen_among_dr"] == sum(i < 4 for i in chosen) / 4
        assert choice["chosen_learnability"] >= choice["candidate_learnability"]


def test_claims_md_gives_sfls_d2_and_d4_from_the_runs_files(sfl_run: Path):
    # docs/campaign_sfl.md's D2 and D4 in CLAIMS.md: both arms' diversity, SFL's choice
    # per cycle, and the budget
    from envgen.report.campaign_section import _trained_worlds
    from envgen.report.inputs import RowRecord, RunRecord, TableRecord
    from envgen.scoring import ACHIEVEMENTS
    from envgen.stats.campaign_spec import primary

    H1_SFL = primary("campaign_sfl")

    run = RunRecord(
        seed=0,
        initial_set=0,
        run_dir=sfl_run,
        score=1.0,
        reward=1.0,
        success_rates=dict.fromkeys(ACHIEVEMENTS, 0.0),
        first_unlock_step=dict.fromkeys(ACHIEVEMENTS),
        llm_calls=0,
        global_steps=1,
    )
    rows = tuple(
        RowRecord(label, "done", "", "abc", None, (run,), designer=designer, planned_runs=20)
        for label, designer in ((H1_SFL.a, "sfl"), (H1_SFL.b, "random"))
    )
    table = TableRecord("campaign_sfl", "sfl", "cpu", False, rows, Path("runs.json"))
    primary = types.SimpleNamespace(claim=H1_SFL)  # D2 reads only the claim's arms
    lines = _trained_worlds(table, primary, None)  # sfl's own heading (D2)
    text = "\n".join(lines)
    from envgen.report.world_diversity import diversity, run_cycles, sfl_choices

    d = diversity([run_cycles(sfl_run)])
    assert f"| {H1_SFL.a} | 1 | {d['distinct']} of {d['worlds']} |" in text
    for cycle, choice in enumerate(sfl_choices(sfl_run), start=1):
        assert (
            f"| {cycle} | {choice['chosen_learnability']:.3f} | "
            f"{choice['candidate_learnability']:.3f} | "
            f"{choice['episodes_per_candidate']:.1f} | {choice['chosen_among_dr']:.2f} |"
        ) in text
    biome = d["coverage"]["settings"]["target_biome"]
    cells = ", ".join(f"{value} {share:.2f}" for value, share in biome.items())
    assert f"| target_biome | {cells} | {cells} | natural " in text  # both arms, then DR's
    assert "results/runs/abc/seed-*" in text
    # D4, from the run's own final_metrics.json: rollouts counted in its env steps
    from envgen.report.campaign_section import _budget

    m = json.loads((sfl_run / "final_metrics.json").read_text())
    budget = "\n".join(_budget(table))
    assert (
        f"| {H1_SFL.a} | 1 | {m['global_steps']:,} | {m['curation_steps']:,} | {m['env_steps']:,} |"
    ) in budget
