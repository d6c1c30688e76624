"""`envgen campaign` on a synthetic run store: order, states, collect, commits, the rule.

Nothing here trains: finished runs are written by `fake_run`, which lays out what a
real run leaves (final_metrics.json, run.yaml, provenance.json, the JSONL logs
and a checkpoint).
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats

from envgen.campaign import cli as campaign_cli
from envgen.campaign.gitcommit import commit_run, is_committed
from envgen.campaign.handoff import commit_partial_runs
from envgen.campaign.process import Process
from envgen.campaign.progress import (
    DAMAGED,
    FINISHED,
    MISSING,
    NOT_STARTED,
    PARTIAL,
    RUNNING,
    SPEED_WINDOW,
    STALE,
    collect_table,
    job_states,
    write_collected,
)
from envgen.campaign.registry import RunRequest, campaigns
from envgen.campaign.run import commit_hook, load_campaign, seed_order
from envgen.campaign.status import status_text
from envgen.evidence.history import above_deviations
from envgen.pipeline.executor import ExecutorConfig, execute
from envgen.pipeline.job_status import DONE, JobResult, job_dir, results_versions
from envgen.pipeline.jobs import Settings
from envgen.pipeline.plan import Job
from envgen.report import claims_md as report_claims
from envgen.report import figures as report_figures
from envgen.report import tables as report_tables
from envgen.report.achievements import comparison_markdown
from envgen.report.campaign_section import withheld_runs
from envgen.report.inputs import load_table, load_tables
from envgen.scoring import ACHIEVEMENTS
from envgen.stats.campaign_claims import (
    INTERIM,
    NO_DIFFERENCE,
    NOT_ENOUGH,
    WORSE,
    evaluate_campaign,
    registered_sentence,
    rules_out,
)
from envgen.stats.campaign_spec import (
    CampaignClaim,
    families,
    missing_words,
    primary,
    words,
)
from envgen.stats.paper_claims import PaperNumbers
from envgen.store import seal_run
from tests import test_report_tables
from tests.envgen_cli import envgen_subprocess

REPO = Path(__file__).resolve().parents[1]
CPU = campaigns()["cpu"]
CPU_SCORE_CLAIMS, CPU_ACHIEVEMENT_CLAIMS = (f.claims for f in families("campaign_cpu"))
H1, H1_SFL = primary("campaign_confirm"), primary("campaign_sfl")
ROWS = (
    "PPO 1.96M Crafter only",
    "Heuristic designer: EnvGen schedule",
    "Heuristic designer: Fixed",
    "Domain randomization: EnvGen schedule",
)


def request(runs_root: Path, commit: bool = False) -> RunRequest:
    return RunRequest(
        "cpu", REPO / CPU.table, CPU.profile, REPO / "params.yaml", runs_root, None, commit
    )


@pytest.fixture(scope="module")
def plan():
    return load_campaign(request(Path("unused")))[0]


@pytest.fixture(scope="module")
def codes():
    return results_versions()


def real_checkpoint(run_dir: Path, step: int) -> None:
    """A checkpoint `load_checkpoint` accepts, resuming at `step`."""
    from envgen.agents.checkpoint import CHECKPOINT_KEYS, save_checkpoint

    payload = {key: {} for key in CHECKPOINT_KEYS}
    payload["counters"] = {"global_step": step}
    save_checkpoint(run_dir / "checkpoints", payload)


def fake_run(run_dir: Path, job: Job, score: float, version: int, finished: bool = True):
    """The files a real run leaves; `finished=False`: a killed run (checkpoint, no summary,
    not sealed)."""
    run_dir.mkdir(parents=True)
    provenance = {"game": "crafter", "results_version": version, "sessions": []}
    (run_dir / "provenance.json").write_text(json.dumps(provenance))
    config = {"seed": job.seed, "config_hash": job.key[0], **job.config.to_dict()}
    (run_dir / "run.yaml").write_text(yaml.safe_dump(config, sort_keys=True))
    total = job.config.total_steps
    steps = total if finished else total // 2
    real_checkpoint(run_dir, steps)
    lines = [{"step": s, "phase": "final", "time/sps": 1000.0} for s in (steps // 2, steps)]
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    (run_dir / "episodes.jsonl").write_text(json.dumps({"length": 100, "reward": 1.0}) + "\n")
    if finished:
        final = {
            "config_hash": job.key[0],
            "episodes": 120,
            "episodes_cut": 4,
            "first_unlock_step": dict.fromkeys(ACHIEVEMENTS),
            "global_steps": total,
            "llm_calls": 0,
            "llm_replay": None,
            "method": job.config.method,
            "reward": 3.0,
            "score": score,
            "seed": job.seed,
            "success_rates": dict.fromkeys(ACHIEVEMENTS, 10.0),
            "wall_s": total / 1000.0,
        }
        (run_dir / "final_metrics.json").write_text(json.dumps(final))
        seal_run(run_dir)


def jobs_by_row(plan) -> dict[str, list[Job]]:
    return {row.name: list(row.jobs) for row in plan.rows}


# --- order, states, collect ------------------------------------------------------------------
def test_jobs_fill_seeds_evenly_across_rows(plan):
    order = seed_order(plan)
    assert len(order) == 20
    assert [job.seed for job in order] == [s for s in range(5) for _ in range(4)]
    first_row = {job.key: row.name for row in plan.rows for job in row.jobs}
    assert [first_row[job.key] for job in order[:4]] == list(ROWS)


def test_confirm_trains_the_two_rows_in_the_first_campaigns_run_dirs_on_fresh_seeds(plan):
    """The registered campaign (docs/campaign_confirm.md): the same run configs as
    campaign_cpu's two rows, so the same run directories, on seeds 5-19 only."""
    c = campaigns()["confirm"]
    confirm = load_campaign(
        RunRequest(
            c.name, REPO / c.table, c.profile, REPO / "params.yaml", Path("u"), None, False, c.seeds
        )
    )[0]
    first = {row.name: {job.key[0] for job in row.jobs} for row in plan.rows}
    ours = {row.name: {job.key[0] for job in row.jobs} for row in confirm.rows}
    assert ours == {
        "PPO 1.96M Crafter only": {"ca3d42bc0a83"},
        "Domain randomization: EnvGen schedule": {"7b838eba3c35"},
    }
    assert all(ours[name] == first[name] for name in ours)
    assert [job.seed for job in seed_order(confirm)] == [s for s in range(5, 20) for _ in range(2)]
    assert c.out_dir == Path("results/campaign_confirm")
    states = job_states(confirm, Path("no-runs-here"), results_versions(), alive=False)
    assert status_text(c, states, None, 2).endswith(
        "registered verdict withheld: 0 of 30 runs (docs/campaign_confirm.md)"
    )


# Every campaign arm's run directory and seeds as the registry resolved them before the
# campaigns became data (replication/campaign_*.yaml's `campaign:` sections).
ARMS = {
    "cpu": {
        "PPO 1.96M Crafter only": ("ca3d42bc0a83", 0, 4),
        "Heuristic designer: EnvGen schedule": ("9894e0ac015d", 0, 4),
        "Heuristic designer: Fixed": ("dd3a78bce48f", 0, 4),
        "Domain randomization: EnvGen schedule": ("7b838eba3c35", 0, 4),
    },
    "confirm": {
        "PPO 1.96M Crafter only": ("ca3d42bc0a83", 5, 19),
        "Domain randomization: EnvGen schedule": ("7b838eba3c35", 5, 19),
    },
    "llm15": {
        "EnvGen: Qwen2.5-Coder-1.5B designer": ("71f7ee870351", 20, 35),
        "Domain randomization: EnvGen schedule": ("7b838eba3c35", 20, 35),
    },
    "sfl": {
        "SFL: EnvGen schedule": ("544657aa9df0", 36, 55),
        "Domain randomization: EnvGen schedule": ("7b838eba3c35", 36, 55),
    },
    "headline": {
        "EnvGen: Qwen2.5-Coder-1.5B designer": ("71f7ee870351", 56, 71),
        "PPO 1.96M Crafter only": ("ca3d42bc0a83", 56, 71),
    },
}


def test_every_declared_campaign_arm_keeps_its_run_directory_and_seeds():
    """`envgen campaign status|start NAME` resolve the runs they did when the registry was
    Python: the same config hash (run directory) and seeds for every arm, in order."""
    assert list(campaigns()) == list(ARMS)
    local = {n: c.local_model for n, c in campaigns().items() if c.local_model}
    assert local == dict.fromkeys(("llm15", "headline"), "qwen2.5-coder-1.5b-instruct")
    for name, c in campaigns().items():
        request = c.request(REPO / "params.yaml", Path("u"), commit=False)
        plan = load_campaign(dataclasses.replace(request, table=REPO / c.table))[0]
        arms = {
            row.name: (
                row.config_hash,
                min(j.seed for j in row.jobs),
                max(j.seed for j in row.jobs),
            )
            for row in plan.rows
        }
        assert arms == ARMS[name], name
        assert len({j.key for row in plan.rows for j in row.jobs}) == sum(
            hi - lo + 1 for _, lo, hi in ARMS[name].values()
        )


def synthetic_store(plan, codes, root: Path) -> None:
    rows = jobs_by_row(plan)
    fp = codes["crafter"]
    for seed, score in ((0, 4.0), (1, 5.0)):
        job = rows[ROWS[0]][seed]
        fake_run(job_dir(job, root), job, score, fp)
    job = rows[ROWS[1]][0]
    fake_run(job_dir(job, root), job, 6.0, fp)
    job = rows[ROWS[1]][1]
    fake_run(job_dir(job, root), job, 6.5, fp + 1)  # finished under another results version
    job = rows[ROWS[2]][0]
    fake_run(job_dir(job, root), job, 0.0, fp, finished=False)


def test_states_progress_and_eta(plan, codes, tmp_path):
    synthetic_store(plan, codes, tmp_path)
    idle = {(s.row, s.job.seed): s for s in job_states(plan, tmp_path, codes, alive=False)}
    assert idle[(ROWS[0], 0)].state == FINISHED and idle[(ROWS[0], 0)].score == 4.0
    assert idle[(ROWS[1], 1)].state == STALE
    assert idle[(ROWS[2], 0)].state == PARTIAL
    assert idle[(ROWS[3], 0)].state == MISSING
    live = job_states(plan, tmp_path, codes, alive=True)
    partial = next(s for s in live if (s.row, s.job.seed) == (ROWS[2], 0))
    assert partial.state == RUNNING and partial.steps == partial.total_steps // 2
    text = status_text(CPU, live, Process(123, 2), 2)
    assert "running 50%" in text and "pid 123" in text
    assert f"{ROWS[0]}: 2 done, 3 missing (of 5)" in text
    # 1,000 steps/s measured on the finished runs; 16 runs and a half left over 2 workers
    left_steps = 16 * 1_960_000 + 980_000
    assert f"about {left_steps / 2000 / 3600:.1f} h at 1,000 env steps/s" in text


def test_eta_prefers_the_running_runs_speed_on_this_machine(plan, codes, tmp_path):
    """Finished runs at 1,000 steps/s elsewhere; the one running here at 250 over its
    last SPEED_WINDOW rollouts (steps over time: half at 500, half at 1/6 of that), after
    faster ones that no longer count."""
    synthetic_store(plan, codes, tmp_path)
    job = jobs_by_row(plan)[ROWS[2]][0]
    metrics = job_dir(job, tmp_path) / "metrics.jsonl"
    last = json.loads(metrics.read_text().splitlines()[-1])
    speeds = [5000.0] * 7 + [500.0, 500.0 / 3] * (SPEED_WINDOW // 2)
    lines = [json.dumps({**last, "time/sps": sps}) for sps in speeds]
    metrics.write_text("\n".join(lines) + '\n{"step": 9')  # the last line, half written
    text = status_text(CPU, job_states(plan, tmp_path, codes, alive=True), None, 2)
    left_steps = 16 * 1_960_000 + 980_000
    assert (
        f"about {left_steps / 500 / 3600:.1f} h at 250 env steps/s per run (measured on "
        "running runs)"
    ) in text


def _rewritten(run_dir: Path, name: str, content: bytes) -> None:
    """`name` of a run replaced by `content`, the run resealed so that its manifest
    matches: a file of the wrong shape, not a tampered one."""
    (run_dir / "manifest.json").unlink(missing_ok=True)
    (run_dir / name).write_bytes(content)
    if (run_dir / "final_metrics.json").is_file():
        seal_run(run_dir)


def _final_with(job: Job, **changes) -> bytes:
    final = {"global_steps": job.config.total_steps, "score": 4.0, "wall_s": 10.0}
    final.update(changes)
    return json.dumps({k: v for k, v in final.items() if v is not ...}).encode()


def _one_state(plan, codes, root: Path):
    """(the state of ROWS[0] seed 0, the status text of every run)."""
    states = job_states(plan, root, codes, alive=False)
    text = status_text(CPU, states, None, 2)
    return next(s for s in states if (s.row, s.job.seed) == (ROWS[0], 0)), text


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"score": None}, "score is missing"),
        ({"score": ...}, "score is missing"),
        ({"score": "4.0"}, "score is '4.0', not a number"),
        ({"wall_s": "fast"}, "wall_s is 'fast', not a number"),
        ({"global_steps": 1.5}, "global_steps is 1.5, not a whole number"),
        (None, "holds a list"),
    ],
)
def test_status_names_a_finished_run_with_bad_final_metrics(plan, codes, tmp_path, changes, words):
    """Files that match their manifest yet hold wrong types: that run's line says so;
    the status of every other run is still shown."""
    synthetic_store(plan, codes, tmp_path)
    job = jobs_by_row(plan)[ROWS[0]][0]
    content = b"[1]" if changes is None else _final_with(job, **changes)
    _rewritten(job_dir(job, tmp_path), "final_metrics.json", content)
    state, text = _one_state(plan, codes, tmp_path)
    assert state.state == DAMAGED and f"final_metrics.json: {words}" in state.problem
    assert f"0  damaged: {job_dir(job, tmp_path)}/final_metrics.json: {words}" in text
    assert f"{ROWS[0]}: 1 done, 1 damaged, 3 missing (of 5)" in text


@pytest.mark.parametrize("cut", ["truncated", "garbled"])
def test_status_shows_a_finished_run_with_a_damaged_log_as_damaged(plan, codes, tmp_path, cut):
    """A sealed run whose episodes.jsonl.gz was cut or overwritten is not "done": its line
    names the log; every other run is still shown."""
    synthetic_store(plan, codes, tmp_path)
    job = jobs_by_row(plan)[ROWS[0]][0]
    log = job_dir(job, tmp_path) / "episodes.jsonl.gz"
    data = log.read_bytes()
    log.write_bytes(data[: len(data) // 2] if cut == "truncated" else b"\x1f\x8b" + b"x" * 40)
    state, text = _one_state(plan, codes, tmp_path)
    assert state.state == DAMAGED and f"{log}: differs from its run's manifest" in state.problem
    assert f"0  damaged: {log}" in text
    assert f"{ROWS[0]}: 1 done, 1 damaged, 3 missing (of 5)" in text


@pytest.mark.parametrize(
    ("sessions", "words"),
    [
        ("abc", "sessions is 'abc', not a list of sessions"),
        ([{"load_start": "x"}], "sessions[0].load_start is 'x', not a list of numbers"),
        ([{"machine": "unknown"}], "sessions[0].machine is 'unknown', not a mapping"),
        ([1], "sessions[0] is 1, not a mapping"),
        ([{"step": "0"}], "sessions[0].step is '0', not a whole number >= 0"),
        ([{"step": -4096}], "sessions[0].step is -4096, not a whole number >= 0"),
    ],
)
def test_status_names_a_provenance_of_the_wrong_shape(plan, codes, tmp_path, sessions, words):
    synthetic_store(plan, codes, tmp_path)
    job = jobs_by_row(plan)[ROWS[0]][0]
    provenance = {"game": "crafter", "results_version": codes["crafter"], "sessions": sessions}
    _rewritten(job_dir(job, tmp_path), "provenance.json", json.dumps(provenance).encode())
    state, text = _one_state(plan, codes, tmp_path)
    assert state.state == FINISHED and state.score == 4.0
    assert state.provenance == f"unreadable ({job_dir(job, tmp_path)}/provenance.json: {words})"
    assert state.provenance in text


def test_a_resumed_runs_speed_counts_only_the_steps_of_its_last_session(plan, codes, tmp_path):
    """wall_s counts from the last resume: a run resumed at 1,568,000 of 1,960,000 that
    took 392 s after it ran at 1,000 steps/s, not 5,000 (all its steps over that time)."""
    synthetic_store(plan, codes, tmp_path)
    job = jobs_by_row(plan)[ROWS[0]][0]
    sessions = [{"event": "start", "step": 0}, {"event": "resume", "step": 1_568_000}]
    provenance = {"game": "crafter", "results_version": codes["crafter"], "sessions": sessions}
    _rewritten(job_dir(job, tmp_path), "provenance.json", json.dumps(provenance).encode())
    _rewritten(job_dir(job, tmp_path), "final_metrics.json", _final_with(job, wall_s=392.0))
    state, text = _one_state(plan, codes, tmp_path)
    assert state.state == FINISHED and state.speed == pytest.approx(1000.0)
    assert "at 1,000 env steps/s per run (measured on finished runs)" in text
    sessions[-1]["step"] = "1568000"  # where it resumed is unknown: no speed from it
    _rewritten(job_dir(job, tmp_path), "provenance.json", json.dumps(provenance).encode())
    assert _one_state(plan, codes, tmp_path)[0].speed is None


@pytest.mark.parametrize(
    ("last", "state", "words"),
    [
        (b"[1]", DAMAGED, "metrics.jsonl: line {last} is [1], not a record"),
        (b'{"step": "abc"}', DAMAGED, "metrics.jsonl: step is 'abc', not a whole number"),
        (b'{"step": 5, "time/sps": "x"}', DAMAGED, "time/sps is 'x', not a number"),
        (b'{"step": 980000, "time/sps": 1000.\xff', PARTIAL, ""),  # torn in a character
    ],
)
def test_status_of_an_unfinished_run_with_an_odd_last_log_line(
    plan, codes, tmp_path, last, state, words
):
    synthetic_store(plan, codes, tmp_path)
    job = jobs_by_row(plan)[ROWS[2]][0]  # unfinished: a checkpoint, half its steps
    log = job_dir(job, tmp_path) / "metrics.jsonl"
    log.write_bytes(log.read_bytes() + last + b"\n")
    states = job_states(plan, tmp_path, codes, alive=False)
    found = next(s for s in states if (s.row, s.job.seed) == (ROWS[2], 0))
    words = words.format(last=len(log.read_bytes().splitlines()))
    assert found.state == state and words in (found.problem or "")
    if state == PARTIAL:
        assert found.steps == found.total_steps // 2
    assert "Traceback" not in status_text(CPU, states, None, 2)


def test_a_partial_run_shows_the_step_it_resumes_from_not_its_last_log(plan, codes, tmp_path):
    """Steps logged after the last checkpoint are trained again on resume."""
    synthetic_store(plan, codes, tmp_path)
    job = jobs_by_row(plan)[ROWS[2]][0]  # killed at 980,000 logged steps
    real_checkpoint(job_dir(job, tmp_path), 819_200)
    states = job_states(plan, tmp_path, codes, alive=False)
    found = next(s for s in states if s.job.key == job.key)
    assert (found.state, found.steps) == (PARTIAL, 819_200)
    assert "partial 42% (819,200 of 1,960,000 steps; resumes from its checkpoint)" in (
        status_text(CPU, states, None, 2)
    )
    (job_dir(job, tmp_path) / "checkpoints" / "latest.pt").write_bytes(b"weights")
    found = next(s for s in job_states(plan, tmp_path, codes, False) if s.job.key == job.key)
    assert found.state == DAMAGED and "unreadable checkpoint" in found.problem


def test_collect_lists_finished_runs_and_says_k_of_n(plan, codes, tmp_path):
    synthetic_store(plan, codes, tmp_path / "runs")
    profile = load_campaign(request(tmp_path))[1]
    table = collect_table(plan, profile, tmp_path / "runs", codes, "`envgen campaign start cpu`")
    rows = {r["row"]: r for r in table["rows"]}
    assert rows[ROWS[0]]["status"] == DONE and len(rows[ROWS[0]]["runs"]) == 2
    assert "2 of 5 seeds finished (campaign in progress" in rows[ROWS[0]]["reason"]
    assert rows[ROWS[1]]["status"] == DONE and len(rows[ROWS[1]]["runs"]) == 1  # stale skipped
    assert rows[ROWS[2]]["status"] == rows[ROWS[3]]["status"] == NOT_STARTED
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(table))
    record = load_table(path)  # the report accepts it
    assert record.is_campaign and record.rows[0].planned_runs == 5
    frame = report_tables.table_frame(record, report_tables.load_reported())
    assert "2 of 5 seeds finished" in frame.iloc[0]["note"]
    text = report_claims.claims_markdown([record])
    assert "## Campaigns: a different claim from the paper's" in text
    assert '> "Campaigns", at the end, is not smoke-scale' in text  # the banner points there
    assert "**not enough runs (1 of 5 and 2 of 5)**" in text
    assert "#### Score: 4 claims, each at level 0.0125" in text
    assert (
        "#### Figure 4's achievements (success rate %), post hoc: 5 claims, each at level 0.01"
    ) in text
    assert "Post hoc: added on 2026-11-24, when 19 of the 20 runs had finished" in text


def test_collect_command_writes_three_files(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)  # the replication file's path is relative to the repository
    outs = [tmp_path / n for n in ("runs.json", "metrics.json", "scores.json")]
    (tmp_path / "runs").mkdir()  # an empty store: nothing finished yet
    args = ["collect", "cpu", "--params", str(REPO / "params.yaml"), "--runs-root"]
    args += [
        str(tmp_path / "runs"),
        *(f"--{k}={p}" for k, p in zip(("out", "metrics", "plots"), outs, strict=True)),
    ]
    assert campaign_cli.main(args) == 0
    assert all(p.is_file() for p in outs)
    assert json.loads(outs[1].read_text()) == {} and json.loads(outs[2].read_text()) == []


def test_collect_refuses_a_runs_root_that_is_not_there_and_writes_nothing(tmp_path):
    """A typo in --runs-root read as an empty store would replace the committed tables
    with an empty campaign: one line naming it, exit 1, the tables' bytes unchanged
    (copies of the committed ones; the committed files are never the outputs here)."""
    outs = []
    for name in ("runs.json", "metrics.json", "scores.json"):
        shutil.copy(REPO / CPU.out_dir / name, tmp_path / name)
        outs.append(tmp_path / name)
    before = [p.read_bytes() for p in outs]
    (tmp_path / "afile").write_text("x")
    for runs_root in (tmp_path / "runs-typo", tmp_path / "afile"):
        args = ["campaign", "collect", "cpu", "--runs-root", str(runs_root)]
        args += [f"--{k}={p}" for k, p in zip(("out", "metrics", "plots"), outs, strict=True)]
        result = envgen_subprocess(*args, cwd=REPO)
        assert result.returncode == 1, result.stdout + result.stderr
        assert "Traceback" not in result.stderr
        assert result.stderr.strip().splitlines() == [
            f"envgen campaign collect: {runs_root}: "
            + ("no such directory" if runs_root.name == "runs-typo" else "is a file")
            + "; give the directory of the run store to collect (--runs-root); "
            "nothing was written"
        ]
        assert [p.read_bytes() for p in outs] == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["afile", "runs.json", "metrics.json", "scores.json"]
    )
    assert not (tmp_path / "runs-typo").exists()


# --- commits -----------------------------------------------------------------------------
@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    for args in (["init", "-q"], ["config", "user.name", "t"], ["config", "user.email", "t@t"]):
        subprocess.run(["git", "-C", str(root), *args], check=True)
    (root / "README").write_text("x\n")
    subprocess.run(["git", "-C", str(root), "add", "README"], check=True)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", "init"], check=True)
    return root


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True
    ).stdout


@pytest.mark.parametrize("project_gitignore", [True, False])
def test_commit_takes_only_the_run_dir_never_checkpoints(plan, codes, repo, project_gitignore):
    """With the project's .gitignore (checkpoints ignored: the real case) and without."""
    if project_gitignore:
        (repo / ".gitignore").write_text((REPO / ".gitignore").read_text())
    job = jobs_by_row(plan)[ROWS[0]][0]
    run_dir = Path("results/runs") / job.key[0] / "seed-0"
    fake_run(repo / run_dir, job, 4.25, codes["crafter"])
    (repo / "other.txt").write_text("user's staged work\n")
    _git(repo, "add", "other.txt")
    logged: list[str] = []
    hook = commit_hook("cpu", plan, logged.append, repo)
    hook(JobResult(job.key, DONE, str(run_dir)))
    assert logged == [f"[campaign cpu: {ROWS[0]} seed 0: score 4.25%]"]
    files = _git(repo, "show", "--name-only", "--format=%s", "HEAD").split()
    assert "other.txt" not in files and not any("checkpoints" in f for f in files)
    assert f"{run_dir}/final_metrics.json" in files and f"{run_dir}/metrics.jsonl.gz" in files
    assert f"{run_dir}/manifest.json" in files
    assert _git(repo, "diff", "--cached", "--name-only").split() == ["other.txt"]
    assert is_committed(run_dir, repo)
    assert commit_run(run_dir, "again", repo) == ""  # nothing new: no commit, no error
    assert _git(repo, "rev-list", "--count", "HEAD").strip() == "2"


def test_commit_takes_the_runs_llm_replies_with_it(plan, codes, repo):
    """A run that called the LLM commits with the cache files its calls were served from
    (it replays without the model); a call served by slot and other replies stay out."""
    job = jobs_by_row(plan)[ROWS[0]][0]
    run_dir = Path("results/runs") / job.key[0] / "seed-0"
    fake_run(repo / run_dir, job, 4.25, codes["crafter"])
    cache = repo / "data" / "llm_cache"
    cache.mkdir(parents=True)
    for key in ("a" * 64, "c" * 64):
        (cache / f"{key}.json").write_text("{}")
    calls = [{"key": "a" * 64, "label": "x"}, {"key": "b" * 64, "label": "y", "served": "slot"}]
    (repo / run_dir / "llm_calls.json").write_text(json.dumps(calls))
    commit_hook("cpu", plan, [].append, repo)(JobResult(job.key, DONE, str(run_dir)))
    files = _git(repo, "show", "--name-only", "--format=", "HEAD").split()
    assert f"data/llm_cache/{'a' * 64}.json" in files and f"{run_dir}/llm_calls.json" in files
    assert not any(("b" * 64) in f or ("c" * 64) in f for f in files)
    untracked = _git(repo, "status", "--porcelain", "--", "data").split()
    assert untracked == ["??", f"data/llm_cache/{'c' * 64}.json"]


def test_commit_waits_for_a_busy_index_and_reports_failures(repo, tmp_path):
    run_dir = repo / "results" / "r"
    run_dir.mkdir(parents=True)
    (run_dir / "final_metrics.json").write_text("{}")
    lock = repo / ".git" / "index.lock"
    lock.write_text("")
    threading.Timer(0.3, lock.unlink).start()
    assert commit_run(Path("results/r"), "run r", repo, wait_s=0.2) == ""
    assert _git(repo, "log", "-1", "--format=%s").strip() == "run r"
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    assert "not a git repository" in commit_run(Path("x"), "m", outside, wait_s=0)


def test_handoff_commits_an_unfinished_run_with_its_checkpoint_until_it_finishes(
    plan, codes, repo, monkeypatch
):
    """A handoff lets a fresh clone resume the run; its finish takes the checkpoint out."""
    monkeypatch.chdir(repo)
    (repo / ".gitignore").write_text((REPO / ".gitignore").read_text())
    job = jobs_by_row(plan)[ROWS[0]][0]
    run_dir = Path("results/runs") / job.key[0] / "seed-0"
    fake_run(run_dir, job, 0.0, codes["crafter"], finished=False)
    real_checkpoint(run_dir, 123_456)
    other = jobs_by_row(plan)[ROWS[1]][0]  # a checkpoint that is not one: kept back
    fake_run(job_dir(other, Path("results/runs")), other, 0.0, codes["crafter"], finished=False)
    (job_dir(other, Path("results/runs")) / "checkpoints" / "latest.pt").write_bytes(b"weights")
    Path("other.txt").write_text("user's staged work\n")
    _git(repo, "add", "other.txt")
    cache = Path("data/llm_cache")  # the replies recorded so far go with the run
    cache.mkdir(parents=True)
    for key in ("d" * 64, "e" * 64):
        (cache / f"{key}.json").write_text("{}")
    (run_dir / "llm_calls.json").write_text(json.dumps([{"key": "d" * 64, "label": "adapt2"}]))
    logged: list[str] = []
    states = job_states(plan, Path("results/runs"), codes, alive=False)
    assert commit_partial_runs("cpu", states, logged.append, Path(".")) == 1
    message = (
        f"campaign cpu: handoff of {ROWS[0]} seed 0 at step 123,456 of 1,960,000 "
        "(`envgen campaign start cpu` resumes it)"
    )
    assert f"[{message}]" in logged
    (kept,) = [line for line in logged if "not handed off" in line]
    assert kept.startswith(f"[handoff] {job_dir(other, Path('results/runs'))}: not handed off: ")
    assert "unreadable checkpoint" in kept
    files = _git(repo, "show", "--name-only", "--format=%s", "HEAD").splitlines()
    assert files[0] == message and "other.txt" not in files
    assert f"{run_dir}/checkpoints/latest.pt" in files and f"{run_dir}/metrics.jsonl" in files
    assert f"data/llm_cache/{'d' * 64}.json" in files and f"{run_dir}/llm_calls.json" in files
    assert not any(("e" * 64) in f for f in files)  # another run's reply stays untracked
    clone = repo.parent / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    there = job_states(plan, clone / "results/runs", codes, alive=False)
    assert next(s for s in there if s.job.key == job.key).state == PARTIAL  # resumable there

    real_checkpoint(run_dir, 1_960_000)  # the resumed run goes on and finishes
    final = {"global_steps": 1_960_000, "score": 5.0, "wall_s": 10.0}
    (run_dir / "final_metrics.json").write_text(json.dumps(final))
    seal_run(run_dir)
    commit_hook("cpu", plan, logged.append, Path("."))(JobResult(job.key, DONE, str(run_dir)))
    assert logged[-1] == f"[campaign cpu: {ROWS[0]} seed 0: score 5.00%]"
    assert not _git(repo, "ls-files", "--", f"{run_dir}/checkpoints").strip()
    assert not (run_dir / "checkpoints" / "latest.pt").exists()  # never resumed again
    assert is_committed(run_dir, Path(".")) and _git(repo, "diff", "--cached", "--name-only") == (
        "other.txt\n"
    )


# --- commands ------------------------------------------------------------------------------
def test_every_command_is_listed_and_registered_by_its_own_module():
    """`envgen --help` lists each command from cli.SUBCOMMANDS without importing it, so
    each module must register exactly the command it is listed under."""
    import argparse

    from envgen.cli import SUBCOMMANDS, build_parser

    listing = build_parser([]).format_help()
    for name, (_, help_text) in SUBCOMMANDS.items():
        assert f"    {name:10s}{help_text[:40]}" in listing, name
    assert build_parser(["-h", "verify"]).format_help() == listing
    for name in SUBCOMMANDS:
        (sub,) = (
            a for a in build_parser([name])._actions if isinstance(a, argparse._SubParsersAction)
        )
        assert sub.choices[name].get_default("func") or sub.choices[name]._subparsers, name


# --- executor callback ----------------------------------------------------------------------
def test_execute_reports_each_result_to_the_callback(plan, codes, tmp_path):
    job = jobs_by_row(plan)[ROWS[0]][0]
    fake_run(job_dir(job, tmp_path), job, 4.0, codes["crafter"])  # finished: not retrained
    seen: list[JobResult] = []
    settings = Settings(runs_root=str(tmp_path), versions=codes)
    results = execute([job], settings, ExecutorConfig(workers=1), lambda _: None, seen.append)
    assert [r.status for r in seen] == [DONE] and results[job.key].status == DONE


# --- the campaign claim rule ------------------------------------------------------------------
@pytest.fixture(scope="module")
def paper():
    return PaperNumbers.load()


def verdicts(paper, a: list[float], b: list[float], planned: int = 5) -> str:
    claim = CPU_SCORE_CLAIMS[0]
    results = evaluate_campaign(
        CPU_SCORE_CLAIMS,
        {"score": {claim.a: a, claim.b: b}},
        {claim.a: planned, claim.b: planned},
        paper,
    )
    assert results[0].level == pytest.approx(0.05 / 4)
    return results[0].verdict


def test_rule_better(paper):
    assert verdicts(paper, [10.0, 10.5, 11.0, 10.2, 10.8], [5.0, 5.5, 6.0, 5.2, 5.8]) == (
        "EnvGen schedule better"
    )


def test_rule_no_difference_says_what_the_upper_bound_rules_out(paper):
    word = verdicts(paper, [5.0, 7.0, 6.0, 4.0, 8.0], [5.5, 6.5, 6.0, 4.5, 7.5])
    # b's mean 6.0 scales the paper's +5.8 over its 26.4 to +1.32; the bound is about +3.4
    assert word.startswith(f"{NO_DIFFERENCE}; rules out +")
    assert word.endswith(": the paper's +5.8, not its +1.32 scaled to our baseline")


def test_rules_out_names_a_reference_only_where_the_bound_lies_below_it():
    assert rules_out(4.89, 5.8, 4.34) == (
        "rules out +4.89 or more: the paper's +5.8, not its +4.34 scaled to our baseline"
    )
    assert rules_out(6.49, 5.8, 4.34) == (
        "rules out +6.49 or more: neither the paper's +5.8 nor its +4.34 scaled to our baseline"
    )
    assert rules_out(1.0, 5.8, 4.34) == (
        "rules out +1.00 or more: the paper's +5.8 and its +4.34 scaled to our baseline"
    )
    assert rules_out(5.8, 5.8, math.nan) == "rules out +5.80 or more: not the paper's +5.8"


def test_a_claim_without_a_paper_pair_is_tested_with_no_paper_figure(paper):
    """A campaign whose question the paper never asked names no paper pair: its claim is
    tested as any other, with no paper difference, scaled gain or power beside it."""
    claim = CampaignClaim("H1: biome-only > DR", "Biome only", "DR", better="better")
    runs = {"score": {"Biome only": [10.0, 11.0, 12.0], "DR": [10.5, 11.5, 12.5]}}
    (r,) = evaluate_campaign((claim,), runs, {"Biome only": 3, "DR": 3}, paper)
    assert all(math.isnan(x) for x in (r.paper_diff, r.scaled_diff, r.power))
    assert r.verdict == f"{NO_DIFFERENCE}; rules out {r.bounds[1]:+.2f} or more"


def test_power_is_the_simulated_planning_figure(paper):
    """The first campaign's domain randomization claim: n = 5 per arm at 0.05/4, the
    paper's +5.8 with our larger stds: the simulated test, not the formula (0.85)."""
    claim = CPU_SCORE_CLAIMS[1]
    dr = [20.82, 21.74, 21.96, 22.81, 23.27]
    crafter = [15.37, 22.13, 19.12, 20.27, 21.87]
    runs = {"score": {claim.a: dr, claim.b: crafter}}
    results = evaluate_campaign(CPU_SCORE_CLAIMS, runs, {}, paper)
    assert results[1].level == pytest.approx(0.05 / 4)
    assert results[1].power == pytest.approx(0.83, abs=0.01)
    assert results[1].scaled_diff == pytest.approx(19.75 * 5.8 / 26.4, abs=0.01)


def test_rule_worse(paper):
    assert verdicts(paper, [5.0, 5.5, 6.0, 5.2, 5.8], [10.0, 10.5, 11.0, 10.2, 10.8]) == WORSE


def test_rule_marks_a_verdict_on_fewer_seeds_than_planned_as_interim(paper):
    a, b = [10.0, 10.5, 11.0, 10.2], [5.0, 5.5, 6.0, 5.2]
    assert verdicts(paper, a, b, planned=4) == "EnvGen schedule better"
    assert verdicts(paper, a, b) == f"{INTERIM} (4 of 5 and 4 of 5): EnvGen schedule better"


def test_rule_not_enough_runs(paper):
    assert verdicts(paper, [5.0], [6.0, 7.0]) == f"{NOT_ENOUGH} (1 of 5 and 2 of 5)"


def achievement_verdicts(paper, rates: dict[str, tuple[list[float], list[float]]]) -> dict:
    """The Figure 4 family's results; `rates`: {achievement: (EnvGen row's, Crafter-only's)}."""
    claims = CPU_ACHIEVEMENT_CLAIMS
    runs = {
        c.metric: dict(zip((c.a, c.b), rates[c.metric.split(":")[1]], strict=True)) for c in claims
    }
    planned = {claims[0].a: 5, claims[0].b: 5}
    results = evaluate_campaign(claims, runs, planned, paper)
    assert all(r.level == pytest.approx(0.05 / 5) for r in results)  # its own family
    return {r.claim.metric.split(":")[1]: r for r in results}


def test_achievement_family_tests_the_papers_five_achievements(paper):
    zero = ([0.0] * 5, [0.0] * 5)
    rates = {
        "collect_iron": ([5.0, 6.0, 5.5, 6.5, 5.8], [1.0, 1.2, 0.8, 1.1, 0.9]),
        "make_stone_pickaxe": ([10.0, 14.0, 12.0, 9.0, 15.0], [11.0, 13.0, 12.0, 10.0, 14.0]),
        "make_stone_sword": ([1.0, 1.5, 1.2, 0.8, 1.1], [20.0, 22.0, 21.0, 19.0, 23.0]),
        "make_iron_pickaxe": zero,
        "make_iron_sword": zero,
    }
    results = achievement_verdicts(paper, rates)
    assert set(results) == {
        "collect_iron", "make_stone_pickaxe", "make_stone_sword",
        "make_iron_pickaxe", "make_iron_sword",
    }  # fmt: skip
    assert results["collect_iron"].verdict == "EnvGen schedule better"
    assert results["collect_iron"].paper_diff == pytest.approx(37.0)  # Figure 4: 55 - 18
    assert results["make_stone_sword"].verdict == WORSE
    no_power = results["make_stone_pickaxe"]
    assert no_power.verdict.startswith(f"{NO_DIFFERENCE}; rules out +")
    assert no_power.verdict.endswith(": the paper's +34.0")  # no scaled gain for rates
    assert no_power.power != no_power.power  # NaN: Figure 4 gives no spread
    assert results["make_iron_sword"].verdict == (
        f"{NO_DIFFERENCE} (every run of both arms at 0.00: nothing varies)"
    )


# --- the registered confirmatory campaign ----------------------------------------------------
CO, DR = "PPO 1.96M Crafter only", "Domain randomization: EnvGen schedule"
FIRST_DR = [20.82, 21.74, 21.96, 22.81, 23.27]
FIRST_CO = [15.37, 22.13, 19.12, 20.27, 21.87]


def campaign_runs(scores, furnace, first_seed: int) -> list[dict]:
    runs = []
    for i, (score, rate) in enumerate(zip(scores, furnace, strict=True)):
        run = test_report_tables.run(first_seed + i, score)
        run["success_rates"] = {**run["success_rates"], "place_furnace": rate}
        runs.append(run)
    return runs


def campaign_table(name: str, rows: dict[str, list[dict]], planned: int) -> dict:
    data = test_report_tables.table(
        name, [test_report_tables.row(label, runs=runs) for label, runs in rows.items()], "cpu"
    )
    for r in data["rows"]:
        r["planned_runs"] = planned
    return data


def assert_h1_withheld(section: str, fresh: int, planned: int) -> None:
    """A registered campaign's H1 row while `fresh` of each arm's `planned` runs are in:
    run counts only, no difference, bound, p or verdict."""
    h1 = next(line for line in section.splitlines() if line.startswith("| H1: "))
    assert h1.endswith(
        f"| - ({fresh} of {planned}) | - ({fresh} of {planned}) | - | - | - | - | - "
        f"| **registered verdict withheld: {2 * fresh} of {2 * planned} runs** |"
    )


def confirm_text(tmp_path: Path, fresh: int, dr_shift: float = 2.5) -> str:
    rng = np.random.default_rng(7)
    co = 19.75 + rng.normal(0, 1.5, 15)
    dr = 19.75 + dr_shift + rng.normal(0, 1.0, 15)
    first = campaign_table(
        "campaign_cpu",
        {
            CO: campaign_runs(FIRST_CO, [18.0, 20.0, 16.0, 19.0, 18.0], 0),
            DR: campaign_runs(FIRST_DR, [39.0, 40.0, 38.0, 41.0, 39.0], 0),
        },
        5,
    )
    confirm = campaign_table(
        "campaign_confirm",
        {
            CO: campaign_runs(co[:fresh], 18.0 + rng.normal(0, 5.0, fresh), 5),
            DR: campaign_runs(dr[:fresh], 39.0 + rng.normal(0, 2.0, fresh), 5),
        },
        15,
    )
    paths = [test_report_tables.write(tmp_path, t) for t in (first, confirm)]
    return report_claims.claims_markdown(load_tables(paths))


def test_confirm_withholds_every_registered_result_until_all_runs_are_in(tmp_path):
    text = confirm_text(tmp_path, fresh=14)
    section = text.split("### campaign_confirm")[1]
    assert_h1_withheld(section, fresh=14, planned=15)
    assert section.count("registered verdict withheld: 28 of 30 runs") == 4  # H1, S2, S1, S3
    assert "Registered wording" not in section and "| pooled |" not in section
    assert "The drop is unexplained." not in section  # the baseline audit waits too
    assert "`git log --reverse -- docs/campaign_confirm.md`, precedes every run's" in section
    assert 'dated at its end ("Deviations")' in section


def test_confirm_gives_the_registered_verdict_pooled_and_per_achievement_when_complete(tmp_path):
    text = confirm_text(tmp_path, fresh=15)
    section = text.split("### campaign_confirm")[1]
    h1 = next(line for line in section.splitlines() if line.startswith("| H1: "))
    assert "(15 of 15)" in h1 and h1.endswith("| **better** |")
    assert (
        "1. Registered wording (docs/campaign_confirm.md): better: domain randomization on "
        "EnvGen's schedule scored +"
    ) in section
    s2 = next(line for line in section.splitlines() if line.startswith("| S2: "))
    assert s2.endswith("| **better** |")
    pooled = next(line for line in section.splitlines() if line.startswith("| pooled |"))
    assert "(20)" in pooled
    assert "| campaign_cpu alone | 22.12 ± 0.96 (5) | 19.75 ± 2.74 (5) | +2.37 [" in section
    baseline = section.split("#### The Crafter-only baseline")[1].split("#### S1")[0]
    assert "The drop is unexplained." in baseline
    assert "is specific to this campaign's Crafter-only runs" in baseline
    assert "Against the first campaign's Crafter-only runs, domain randomization" in baseline
    s1 = section.split("#### S1")[1].split("#### S3")[0]
    assert "mixes two populations" in s1
    assert "campaign_cpu's own section tests the same comparison among its family's 4" in s1
    s3 = section.split("#### S3")[1]
    assert s3.count("\n| ") == 1 + len(ACHIEVEMENTS)  # the header, one line per achievement
    assert "Bonferroni's threshold is 0.0023" in s3


def test_registered_no_difference_names_each_reference_it_rules_out_or_not(paper):
    rng = np.random.default_rng(1)
    a, b = list(20.0 + rng.normal(0, 1.0, 15)), list(20.0 + rng.normal(0, 1.0, 15))
    r = evaluate_campaign((H1,), {"score": {H1.a: a, H1.b: b}}, {H1.a: 15, H1.b: 15}, paper)[0]
    high = r.bounds[1]
    assert 0 < high < 2.37 and r.verdict.startswith(f"{NO_DIFFERENCE}; rules out {high:+.2f}")
    refs = [("the first campaign's", 2.37), ("huge", high - 0.01)]
    text = registered_sentence(r, refs, words("campaign_confirm"))
    assert text.startswith("no difference detected: ")
    assert f"The data rule out an effect of {high:+.2f} or more; " in text
    assert text.endswith(
        "it rules out +2.37 (the first campaign's); "
        f"it does not rule out {high - 0.01:+.2f} (huge)."
    )


LLM = "EnvGen: Qwen2.5-Coder-1.5B designer"


def llm15_text(tmp_path: Path, fresh: int, llm_shift: float) -> str:
    """CLAIMS.md with the first campaign, the confirm campaign and llm15 (`fresh` runs of
    each of its arms in, 16 planned; arm a `llm_shift` points above arm b on average)."""
    rng = np.random.default_rng(3)
    furnace = [30.0] * 16
    dr = 21.5 + rng.normal(0, 1.3, 16)
    llm = 21.5 + llm_shift + rng.normal(0, 1.3, 16)
    first = campaign_table(
        "campaign_cpu",
        {CO: campaign_runs(FIRST_CO, furnace[:5], 0), DR: campaign_runs(FIRST_DR, furnace[:5], 0)},
        5,
    )
    confirm = campaign_table(
        "campaign_confirm",
        {CO: campaign_runs(list(15.0 + rng.normal(0, 2.0, 15)), furnace[:15], 5)},
        15,
    )
    llm15 = campaign_table(
        "campaign_llm15",
        {
            LLM: campaign_runs(list(llm[:fresh]), furnace[:fresh], 20),
            DR: campaign_runs(list(dr[:fresh]), furnace[:fresh], 20),
        },
        16,
    )
    paths = [test_report_tables.write(tmp_path, t) for t in (first, confirm, llm15)]
    return report_claims.claims_markdown(load_tables(paths)).split("### campaign_llm15")[1]


def test_llm15_withholds_its_verdict_and_descriptives_until_all_32_runs_are_in(tmp_path):
    section = llm15_text(tmp_path, fresh=15, llm_shift=3.0)
    assert_h1_withheld(section, fresh=15, planned=16)
    assert section.count("registered verdict withheld: 30 of 32 runs") == 3  # H1, D1, D3
    assert "Registered wording" not in section and "| campaign_cpu: " not in section
    assert "`git log --reverse -- docs/campaign_llm15.md`, precedes every run's" in section


def test_llm15_gives_the_registered_words_and_its_descriptives_when_complete(tmp_path):
    section = llm15_text(tmp_path, fresh=16, llm_shift=3.0)
    h1 = next(line for line in section.splitlines() if line.startswith("| H1: "))
    assert "(16 of 16)" in h1 and h1.endswith("| **better** |")
    assert "stay the primary; chosen after this campaign's runs were seen" in section
    assert (
        "Registered wording (docs/campaign_llm15.md): better: EnvGen with the 1.5B LLM "
        "designer scored +"
    ) in section
    assert "points above domain randomization on the same schedule (one-sided 95% lower" in section
    assert (
        "; 16 + 16 seeds, both arms trained in this campaign). An adaptive LLM designer "
        "added to varied worlds for the nature network on CPU."
    ) in section
    d1 = section.split("#### D1")[1].split("#### D2")[0]
    assert "| campaign_cpu: PPO 1.96M Crafter only | 19.75 ± 2.74 (5) |" in d1
    assert "| campaign_confirm: PPO 1.96M Crafter only | " in d1 and "(15) |" in d1
    assert "never pooled" in d1
    assert section.split("#### D3")[1].count("\n| ") == 1 + len(ACHIEVEMENTS)
    assert "design_quality --model qwen2.5-coder-1.5b-instruct --runs results/runs/" in section


def test_llm15_d2_measures_the_listed_arm_a_runs_replies_from_the_cache():
    """D2 is re-derived from the committed replies of the runs the table lists, on every
    build (so `make verify`, rebuilding CLAIMS.md, re-derives it too)."""
    from envgen.llm.cache import DEFAULT_CACHE_DIR
    from envgen.report.design_quality import measure_groups, run_keys, summarize

    tables = load_tables(
        [
            Path(f"results/{t}/runs.json")
            for t in ("campaign_cpu", "campaign_confirm", "campaign_llm15")
        ]
    )
    section = report_claims.claims_markdown(tables).split("### campaign_llm15")[1]
    d2 = section.split("#### D2")[1].split("#### D3")[0]
    arm = next(r for r in tables[-1].rows if r.row.startswith("EnvGen"))
    runs = [run.run_dir for run in arm.runs]
    s = summarize(
        [q for rows in measure_groups(DEFAULT_CACHE_DIR, run_keys(runs)).values() for q in rows]
    )
    assert f"Over the {s['replies']} distinct replies of arm a's {len(runs)} runs" in d2
    assert f"{s['out_of_range']} of {s['values']} values out of range" in d2
    assert f"{s['adaptations']} adaptations moved the worlds" in d2 and s["adaptations"] > 0
    assert f"positive in {s['toward_weakness_positive']} of {s['adaptations']};" in d2
    per_reply = ", ".join(f"{k} in {n}" for k, n in s["distinct_of_n"].items())
    assert f"(distinct worlds per reply: {per_reply})" in d2
    assert sum(s["distinct_of_n"].values()) == s["replies"] - s["unusable"]


def test_a_registered_campaign_in_progress_shows_no_score_in_tables_figures_or_metrics(tmp_path):
    rng = np.random.default_rng(5)
    rows = {
        LLM: campaign_runs(list(20 + rng.normal(0, 1, 3)), [30.0] * 3, 20),
        DR: campaign_runs(list(20 + rng.normal(0, 1, 2)), [30.0] * 2, 20),
    }
    table = campaign_table("campaign_llm15", rows, 16)
    loaded = load_tables([test_report_tables.write(tmp_path, table)])
    written = report_tables.write_tables(loaded, tmp_path / "tables", tmp_path / "metrics.json")
    md = (tmp_path / "tables" / "campaign_llm15.md").read_text()
    assert "**registered verdict withheld: 5 of 32 runs** (docs/campaign_llm15.md)" in md
    assert "±" not in md and tmp_path / "tables" / "campaign_llm15.csv" not in written
    assert json.loads((tmp_path / "metrics.json").read_text()).get("campaign_llm15") is None
    log = report_figures.write_figures(loaded, tmp_path / "figures", tmp_path / "plots")
    assert log == ["campaign_llm15: no figures, registered verdict withheld: 5 of 32 runs"]
    outs = [tmp_path / name for name in ("runs.json", "m.json", "s.json")]
    write_collected(table, outs, withheld=True)
    assert json.loads(outs[1].read_text()) == {LLM: {"runs": 3}, DR: {"runs": 2}}
    assert json.loads(outs[2].read_text()) == []
    write_collected(table, outs)  # complete (or not registered): the scores
    assert "score" in json.loads(outs[1].read_text())[LLM] and json.loads(outs[2].read_text())


def test_llm15_no_difference_names_the_registered_paper_references(tmp_path):
    section = llm15_text(tmp_path, fresh=16, llm_shift=0.0)
    wording = next(line for line in section.splitlines() if "Registered wording" in line)
    assert (
        "no difference detected: " in wording and "; 16 + 16 seeds). The data rule out" in wording
    )
    assert wording.rstrip().endswith(
        "+2.30 (the paper's PPO + EnvGen − Fixed); "
        "it rules out +5.80 (the paper's PPO + EnvGen − Crafter-only)."
    )


def test_per_achievement_comparisons_carry_their_multiplicity_and_wait_for_every_run(tmp_path):
    rows = {
        CO: campaign_runs(FIRST_CO, [18.0, 20.0, 16.0, 19.0, 18.0], 0),
        DR: campaign_runs(FIRST_DR, [39.0, 40.0, 38.0, 41.0, 39.0], 0),
    }
    done = load_table(test_report_tables.write(tmp_path, campaign_table("campaign_cpu", rows, 5)))
    lines = comparison_markdown(done)
    assert "22 comparisons: about 1.1 below 0.05 are expected by chance" in lines[1]
    assert "Bonferroni's threshold is 0.0023" in lines[1]
    assert lines[3] == f"| Achievement | {DR} |"
    furnace = next(line for line in lines if line.startswith("| place_furnace |"))
    assert furnace.startswith("| place_furnace | +21.20 (p ")
    waiting = campaign_table("campaign_cpu", rows, 6)
    (tmp_path / "w").mkdir()
    partial = load_table(test_report_tables.write(tmp_path / "w", waiting))
    assert comparison_markdown(partial) == [
        "",
        "Per-achievement comparisons: when every planned run of campaign_cpu is in.",
    ]


def test_a_registered_campaigns_tables_wait_for_every_arm_not_the_total(tmp_path):
    """21 + 19 runs of 20 + 20 planned make 40, but arm b still misses one: withheld, 39 of
    the plan's 40 in."""
    rows = {
        H1_SFL.a: campaign_runs([20.0] * 21, [10.0] * 21, 36),
        H1_SFL.b: campaign_runs([22.0] * 19, [30.0] * 19, 36),
    }
    table = load_table(test_report_tables.write(tmp_path, campaign_table("campaign_sfl", rows, 20)))
    assert withheld_runs(table) == "39 of 40 runs"
    (tmp_path / "done").mkdir()
    rows[H1_SFL.b] = campaign_runs([22.0] * 20, [30.0] * 20, 36)
    rows[H1_SFL.a] = rows[H1_SFL.a][:20]
    done = campaign_table("campaign_sfl", rows, 20)
    assert withheld_runs(load_table(test_report_tables.write(tmp_path / "done", done))) is None


def test_a_registered_campaigns_comparisons_are_its_registered_a_minus_b(tmp_path):
    """sfl's table lists SFL first; its per-achievement signs are SFL − DR, as D3 in
    CLAIMS.md, not the first row subtracted from the others."""
    rows = {
        H1_SFL.a: campaign_runs([20.0] * 20, [10.0 + i % 3 for i in range(20)], 36),
        H1_SFL.b: campaign_runs([22.0] * 20, [30.0 + i % 3 for i in range(20)], 36),
    }
    table = load_table(test_report_tables.write(tmp_path, campaign_table("campaign_sfl", rows, 20)))
    lines = comparison_markdown(table)
    assert f"campaign_sfl: each row − {H1_SFL.b}, success rate points" in lines[1]
    assert lines[3] == f"| Achievement | {H1_SFL.a} |"
    furnace = next(line for line in lines if line.startswith("| place_furnace |"))
    assert furnace.startswith("| place_furnace | -20.00 (p ")


def test_each_registered_campaign_declares_words_its_registration_holds():
    """A registered campaign's declared verdict words are written in its registration above
    its Deviations (`envgen verify`'s "registrations frozen"); a changed word is named."""
    registered = [c for c in campaigns().values() if c.registration]
    assert {c.name for c in registered} == {"confirm", "llm15", "sfl", "headline"}
    for c in registered:
        text = above_deviations(Path(c.registration).read_text(encoding="utf-8"))
        assert missing_words(c, text) is None, c.name
        assert c.verdict is not None and c.verdict.document == c.registration
    confirm = campaigns()["confirm"]
    text = above_deviations(Path(confirm.registration).read_text(encoding="utf-8"))
    edited = text.replace("Diverse worlds alone", "Varied worlds alone")
    assert missing_words(confirm, edited) == confirm.verdict.coda


def committed_run_dirs(campaign: str) -> dict[str, list[Path]]:
    """{row: its committed runs' folders} of a campaign's committed runs.json."""
    committed = json.loads((REPO / f"results/{campaign}/runs.json").read_text())
    return {r["row"]: [REPO / x["run_dir"] for x in r["runs"]] for r in committed["rows"]}


def sfl_text(tmp_path: Path, fresh: int, sfl_shift: float) -> tuple[str, dict[str, list[float]]]:
    """CLAIMS.md's sfl section with the first, confirm and llm15 campaigns and sfl
    (`fresh` runs of each of its arms in, 20 planned; arm a `sfl_shift` points above arm
    b on average), and {arm: its runs' scores}. Each synthetic run points at one of the
    campaign's committed run folders of its arm, so D2 reads real worlds and SFL
    choices."""
    rng = np.random.default_rng(11)
    folders = committed_run_dirs("campaign_sfl")
    arms, scores = {}, {}
    for label, shift in ((H1_SFL.a, sfl_shift), (H1_SFL.b, 0.0)):
        scores[label] = list(22.0 + shift + rng.normal(0, 1.5, fresh))
        runs = campaign_runs(scores[label], [30.0] * fresh, 36)
        for i, run in enumerate(runs):
            run["run_dir"] = str(folders[label][i % len(folders[label])])
        arms[label] = runs
    furnace = [30.0] * 16
    others = [
        campaign_table(
            "campaign_cpu",
            {
                CO: campaign_runs(FIRST_CO, furnace[:5], 0),
                DR: campaign_runs(FIRST_DR, furnace[:5], 0),
            },
            5,
        ),
        campaign_table(
            "campaign_confirm",
            {CO: campaign_runs(list(15.0 + rng.normal(0, 2.0, 15)), furnace[:15], 5)},
            15,
        ),
        campaign_table(
            "campaign_llm15",
            {
                LLM: campaign_runs(list(20.0 + rng.normal(0, 1.3, 16)), furnace, 20),
                DR: campaign_runs(list(21.5 + rng.normal(0, 1.3, 16)), furnace, 20),
            },
            16,
        ),
    ]
    sfl = campaign_table("campaign_sfl", arms, 20)
    for r in sfl["rows"]:  # as collect names them: D2 reads the worlds of designed rows
        r["designer"] = "sfl" if r["row"] == H1_SFL.a else "random"
    paths = [test_report_tables.write(tmp_path, t) for t in (*others, sfl)]
    section = report_claims.claims_markdown(load_tables(paths)).split("### campaign_sfl")[1]
    return section, scores


def test_sfl_withholds_its_verdict_until_all_40_runs_are_in(tmp_path):
    section, _ = sfl_text(tmp_path, fresh=19, sfl_shift=-3.0)
    assert_h1_withheld(section, fresh=19, planned=20)
    assert section.count("registered verdict withheld: 38 of 40 runs") == 3  # H1, D1, D3
    assert "Registered wording" not in section and "| campaign_llm15: " not in section
    assert "given with the registered verdict (38 of 40 runs)" in section  # rliable's views
    assert "stay the primary; chosen before this campaign's runs (1f9312d)" in section
    assert "| SFL: EnvGen schedule | 19 | " in section.split("#### D2")[1]  # no score: shown
    assert "`git log --reverse -- docs/campaign_sfl.md`, precedes every run's" in section


def test_sfl_gives_the_registered_words_and_its_descriptives_when_complete(tmp_path):
    """The path the campaign's 40th run takes, rendered before it lands: H1's registered
    words, rliable's views, D1 beside llm15 and the Crafter-only runs, D2 from the runs'
    own worlds and SFL's choices, D3 over every achievement, D4 from their final metrics."""
    section, _ = sfl_text(tmp_path, fresh=20, sfl_shift=-3.0)
    h1 = next(line for line in section.splitlines() if line.startswith("| H1: "))
    assert "(20 of 20)" in h1 and h1.endswith("| **worse** |")
    assert (
        "Registered wording (docs/campaign_sfl.md): worse: SFL on EnvGen's schedule scored "
    ) in section
    assert "below domain randomization on the same schedule (one-sided 95% upper bound" in section
    assert "; 20 + 20 seeds)." in section
    assert "IQM difference of the score" in section and "rliable_campaign_sfl.png" in section
    d1 = section.split("#### D1")[1].split("#### D2")[0]
    for row in (f"campaign_sfl: {H1_SFL.a}", f"campaign_sfl: {H1_SFL.b}", f"campaign_llm15: {LLM}"):
        assert f"| {row} | " in d1 and "(20) |" in d1
    assert "| campaign_cpu: PPO 1.96M Crafter only | 19.75 ± 2.74 (5) |" in d1
    d2 = section.split("#### D2")[1].split("#### D3")[0]
    assert "SFL's choice per cycle, mean over arm a's 20 runs" in d2
    assert "| 4 | " in d2 and "| 5 | " not in d2  # 4 cycles
    assert "| start with iron_sword | " in d2
    assert section.split("#### D3")[1].split("#### D4")[0].count("\n| ") == 1 + len(ACHIEVEMENTS)
    d4 = section.split("#### D4")[1]
    assert f"| {H1_SFL.a} | 20 | 1,830,912 | 131,072 | 1,961,984 |" in d4
    assert f"| {H1_SFL.b} | 20 | 1,961,984 | none recorded | 1,961,984 |" in d4


def test_sfl_better_reports_scipys_one_sided_welch_p_and_bound(tmp_path):
    """The registered test recomputed by scipy on the same scores: the one-sided Welch p
    of a > b and the lower bound of the two-sided 90% interval (the one-sided 95% bound)
    are the numbers the registered words print."""
    section, scores = sfl_text(tmp_path, fresh=20, sfl_shift=3.0)
    a, b = scores[H1_SFL.a], scores[H1_SFL.b]
    p = stats.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue
    low = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.90).low
    h1 = next(line for line in section.splitlines() if line.startswith("| H1: "))
    assert h1.endswith("| **better** |")
    words = next(line for line in section.splitlines() if "Registered wording" in line)
    assert (
        f"better: SFL on EnvGen's schedule scored {np.mean(a) - np.mean(b):+.2f} points above "
        f"domain randomization on the same schedule (one-sided 95% lower bound {low:+.2f}, "
        f"p = {p:.3g}; 20 + 20 seeds, both arms trained in this campaign, SFL's rollouts in "
        "its 1.96M steps). Choosing the worlds by the agent's own rollouts added to randomly "
        "drawn worlds for the nature network on CPU."
    ) in words


def test_sfl_no_difference_names_the_registered_paper_references_unscaled(tmp_path):
    section, _ = sfl_text(tmp_path, fresh=20, sfl_shift=-0.3)
    h1 = next(line for line in section.splitlines() if line.startswith("| H1: "))
    assert h1.endswith("| **no difference detected** |")  # the references: below, registered
    words = next(line for line in section.splitlines() if "Registered wording" in line)
    assert "Registered wording (docs/campaign_sfl.md): no difference detected: +" in words
    assert "; 20 + 20 seeds). The data rule out an effect of +" in words
    assert words.endswith(
        "; it rules out +2.30 (the paper's PPO + EnvGen − Fixed); it rules out +5.80 "
        "(the paper's PPO + EnvGen − Crafter-only)."
    )


# --- the registered campaign `headline` ------------------------------------------------------
def headline_text(tmp_path: Path, fresh: int) -> str:
    """CLAIMS.md's headline section beside the four earlier campaigns (`fresh` runs of each
    arm in, 16 planned). Arm a's synthetic runs point at llm15's committed runs of the
    same config, so D3 reads real worlds and replies; every score is synthetic."""
    rng = np.random.default_rng(5)
    real = {  # runs whose files a section reads: arm a's worlds, sfl's budget (D4)
        ("campaign_headline", LLM): committed_run_dirs("campaign_llm15")[LLM],
        ("campaign_sfl", DR): committed_run_dirs("campaign_sfl")[DR],
    }
    furnace = [30.0] * 20

    def arms(name, rows, planned, first_seed):
        data = campaign_table(
            name, {label: campaign_runs(list(scores), furnace[: len(scores)], first_seed)
                   for label, scores in rows.items()}, planned)  # fmt: skip
        for r in data["rows"]:
            if name == "campaign_headline":
                r["designer"] = {LLM: "llm:qwen2.5-coder-1.5b-instruct"}.get(r["row"])
                for i, run in enumerate(r["runs"]):  # D2's CPU classes, most runs first
                    run["machine"] = "Intel (AMX), cpu" if i % 4 == 0 else "AMD (AVX512), cpu"
            for i, run in enumerate(r["runs"]) if (name, r["row"]) in real else ():
                run["run_dir"] = str(real[name, r["row"]][i])
        return data

    n = rng.normal
    tables = [
        arms("campaign_cpu", {CO: FIRST_CO, DR: FIRST_DR}, 5, 0),
        arms("campaign_confirm", {CO: 15 + n(0, 2, 15), DR: 21.5 + n(0, 1, 15)}, 15, 5),
        arms("campaign_llm15", {LLM: 20 + n(0, 1, 16), DR: 22 + n(0, 1, 16)}, 16, 20),
        arms("campaign_sfl", {DR: 22 + n(0, 1, 20)}, 20, 36),
        arms("campaign_headline", {LLM: 20 + n(0, 1, fresh), CO: 15 + n(0, 2, fresh)}, 16, 56),
    ]
    paths = [test_report_tables.write(tmp_path, t) for t in tables]
    return report_claims.claims_markdown(load_tables(paths)).split("### campaign_headline")[1]


def test_headline_reports_its_registered_descriptives_in_the_registrations_order(tmp_path):
    """docs/campaign_headline.md's D1-D3, in its order and words: every achievement with the
    paper's Figure 4 skills it names marked; each arm beside the six earlier arms it names,
    never pooled, with the CPU classes of each; the worlds of arm a (the Crafter-only arm
    has none) and its designer's replies."""
    section = headline_text(tmp_path, fresh=16)
    headings = [line for line in section.splitlines() if line.startswith("#### D")]
    assert [h.split(":")[0][5:] for h in headings] == [
        "D1, descriptive", "D2, descriptive", "D3, descriptive", "D3, continued"
    ]  # fmt: skip
    d1 = section.split("#### D1")[1].split("#### D2")[0]
    named = (
        "place_furnace",
        "make_stone_pickaxe",
        "make_stone_sword",
        "collect_coal",
        "collect_iron",
    )
    marked = [
        line.split(" |")[0][2:]
        for line in d1.splitlines()
        if line.startswith("| ") and "(the paper's Figure 4)" in line
    ]
    assert marked == [f"{a} (the paper's Figure 4)" for a in ACHIEVEMENTS if a in named]
    assert d1.count("\n| ") == 1 + len(ACHIEVEMENTS)
    assert "the tests above stay the primary; its registration's D4, chosen before" in section
    d2 = section.split("#### D2")[1].split("#### D3")[0]
    shown = [line.split(" | ")[0][2:] for line in d2.splitlines() if line.startswith("| camp")]
    assert shown == [
        f"campaign_headline: {LLM}", f"campaign_headline: {CO}", f"campaign_llm15: {LLM}",
        f"campaign_confirm: {CO}", f"campaign_cpu: {CO}", f"campaign_confirm: {DR}",
        f"campaign_llm15: {DR}", f"campaign_sfl: {DR}",
    ]  # fmt: skip
    assert "| Runs | Score (n) | Trained on |" in d2 and "never pooled" in d2
    assert "not given" not in d2
    assert "| campaign_cpu: PPO 1.96M Crafter only | 19.75 ± 2.74 (5) | unknown: 5 runs |" in d2
    assert "\ncampaign_cpu's unknown machine: Where its provenance is unrecorded, retraining" in d2
    headline = [line for line in d2.splitlines() if "headline: " in line]
    assert len(headline) == 2
    assert all(
        r.endswith("| AMD (AVX512), cpu: 12 runs; Intel (AMX), cpu: 4 runs |") for r in headline
    )
    d3 = section.split("#### D3, descriptive")[1].split("#### D3, continued")[0]
    assert f"| {LLM} | 16 | " in d3 and f"| {CO} |" not in d3  # Crafter-only: no worlds
    assert "| start with iron_sword | " in d3 and "SFL's choice" not in d3
    replies = section.split("#### D3, continued")[1]
    assert "distinct replies of arm a's 16 runs" in replies


def test_headline_withholds_its_scores_but_not_its_worlds_until_all_32_runs_are_in(tmp_path):
    section = headline_text(tmp_path, fresh=15)
    assert_h1_withheld(section, fresh=15, planned=16)
    assert section.count("registered verdict withheld: 30 of 32 runs") == 3  # H1, D1, D2
    assert "| campaign_llm15: " not in section and "(the paper's Figure 4) |" not in section
    assert f"| {LLM} | 15 | " in section.split("#### D3, descriptive")[1]  # no score: shown
