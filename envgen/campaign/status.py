"""What the run store holds of a campaign: `status` as text (one line per (row, seed),
counts per row, an ETA), `collect` as its runs.json, metrics.json and scores.json."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from envgen.campaign.failures import failures_file, message_of, read_failures, resume_refused
from envgen.campaign.gitcommit import is_committed
from envgen.campaign.machines import reuse_lines, row_reuse
from envgen.campaign.process import Process, live_process
from envgen.campaign.progress import (
    DAMAGED,
    FAILED_RUN,
    FINISHED,
    MISSING,
    PARTIAL,
    RUNNING,
    STALE,
    JobState,
    collect_table,
    eta_s,
    job_states,
    write_collected,
)
from envgen.campaign.registry import Campaign
from envgen.campaign.run import load_campaign
from envgen.envs.vector import usable_cores
from envgen.input_checks import existing_dir
from envgen.pipeline.job_status import results_versions

STATES = (FINISHED, RUNNING, PARTIAL, FAILED_RUN, STALE, DAMAGED, MISSING)


def status(c: Campaign, params: Path, runs_root: Path) -> int:
    """Print every (row, seed)'s state, counts per row, and an ETA."""
    plan, _, executor = load_campaign(c.request(params, runs_root))
    process = live_process(c)
    failures = read_failures(failures_file(c.name))
    alive = process is not None
    states = job_states(plan, runs_root, results_versions(), alive, is_committed, None, failures)
    workers = (process and process.workers) or executor.local_workers(usable_cores(), 0)
    print(status_text(c, states, process, workers))
    known = {s.run_dir: bool(s.committed) for s in states}  # git asked once per run
    reuse = row_reuse(plan, runs_root, results_versions(), lambda d: known.get(d, False))
    print("\n".join(["", *reuse_lines(reuse)]))
    return 0


def collect(c: Campaign, params: Path, runs_root: Path, outs: Sequence[Path]) -> int:
    """Write runs.json, metrics.json and scores.json from the run store; trains nothing.

    A `runs_root` that is not a directory (a typo) is refused before anything is written:
    read as an empty store, it would replace the committed tables with an empty campaign."""
    existing_dir(runs_root, "the run store to collect (--runs-root); nothing was written")
    plan, profile, _ = load_campaign(c.request(params, runs_root, commit=False))
    table = collect_table(
        plan, profile, runs_root, results_versions(), f"`envgen campaign start {c.name}`"
    )
    done = sum(len(row["runs"]) for row in table["rows"])
    planned = sum(len(row.jobs) for row in plan.rows)
    withheld = c.registration is not None and done < planned
    write_collected(table, outs, withheld)
    return 0


def describe(state: JobState, alive: bool) -> str:
    """One job's state in words, with its progress or score."""
    progress = f"{state.steps:,} of {state.total_steps:,} steps"
    percent = 100 * state.steps / state.total_steps if state.total_steps else 0.0
    if state.state == FINISHED:
        commit = {True: "committed", False: "not committed", None: ""}[state.committed]
        return f"done ({commit}), score {state.score:.2f}%" if commit else "done"
    if state.state == RUNNING:
        return f"running {percent:.0f}% ({progress})"
    if state.state == PARTIAL:
        return f"partial {percent:.0f}% ({progress}; resumes from its checkpoint)"
    if state.state == STALE:
        return "stale (finished under other code; will be redone)"
    if state.state == DAMAGED:
        return f"damaged: {state.problem}"
    if state.state == FAILED_RUN:
        reason = state.problem or ""
        what = "resume refused" if resume_refused(reason) else "failed"
        return f"{what} (not running; tried again on the next start): {message_of(reason)}"
    return "missing (queued)" if alive else "missing"


def status_text(
    campaign: Campaign, states: Sequence[JobState], process: Process | None, workers: int
) -> str:
    """The whole status report; `process`: the live campaign process or None."""
    alive = process is not None
    head = f"campaign {campaign.name} ({campaign.table}, profile {campaign.profile}): " + (
        f"running, pid {process.pid}, {workers} at once, log {campaign.log}"
        if alive
        else f"no campaign process running (continue: envgen campaign start {campaign.name})"
    )
    width = max(len(s.row) for s in states) if states else 10
    lines = [head, "", f"{'row':{width}s}  seed  state"]
    for s in states:
        lines.append(f"{s.row:{width}s}  {s.job.seed:4d}  {describe(s, alive)}")
        if s.provenance:
            lines.append(f"{'':{width}s}        {s.provenance}")
    lines += ["", "per row:"]
    for row in dict.fromkeys(s.row for s in states):
        counts = Counter(s.state for s in states if s.row == row)
        parts = ", ".join(f"{counts[k]} {k}" for k in STATES if counts[k])
        lines.append(f"  {row}: {parts} (of {counts.total()})")
    lines += ["", eta_line(campaign.name, states, workers, alive)]
    registration = campaign.registration
    if registration:
        done = sum(s.state == FINISHED for s in states)
        lines.append(
            f"registered verdict withheld: {done} of {len(states)} runs ({registration})"
            if done < len(states)
            else f"all {done} registered runs are in: the registered verdict is in CLAIMS.md "
            f"after `envgen campaign collect {campaign.name}` and `make repro` ({registration})"
        )
    return "\n".join(lines)


def eta_line(name: str, states: Sequence[JobState], workers: int, alive: bool) -> str:
    """Time left at the measured speed, or why it is not known."""
    left, speed = eta_s(states, workers)
    if left == 0:
        return f"every run finished: `envgen campaign collect {name}`, then `make repro`"
    if left is None or speed is None:
        return "ETA: no speed measured yet (no finished or running run)"
    source = (
        "running runs" if any(s.state == RUNNING and s.speed for s in states) else "finished runs"
    )
    when = "" if alive else " once started"
    return (
        f"ETA{when}: about {left / 3600:.1f} h at {speed:,.0f} env steps/s per run "
        f"(measured on {source}), {workers} run(s) at once"
    )
