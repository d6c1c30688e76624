"""`envgen campaign start|status|stop|handoff|collect|run NAME`: a campaign across machines.

    envgen campaign start cpu      # train the missing runs in the background, commit each
    envgen campaign status cpu     # (row, seed): done/running/partial/stale/damaged/missing; ETA
    envgen campaign collect cpu    # results/campaign_cpu/runs.json from the run store
    envgen campaign stop cpu       # stop it; the run in flight resumes on the next start
    envgen campaign handoff cpu    # stop at the next checkpoints, commit unfinished runs too

A campaign is one replication file under one profile (`CAMPAIGNS`). `start` launches
`python -m envgen.pipeline.campaign run NAME` in its own session (log and pid file under
`.envgen/campaigns/`, git-ignored) and refuses while one is alive. Each finished run is
committed at once (`envgen.pipeline.gitcommit`), so any checkout, on any machine,
continues with `start` and trains only the missing seeds. `collect` trains nothing
(the DVC stage `campaign_cpu`; docs/pipeline.md, "CPU campaign").
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from envgen.errors import ConfigError, EnvGenError
from envgen.input_checks import OneLineParser, fail, whole_number

if TYPE_CHECKING:  # imported where used: it loads the Crafter engine (about 0.7 s)
    from envgen.pipeline.campaign_run import RunRequest

STATE_DIR = Path(".envgen/campaigns")
PROCESS_MARK = "envgen.pipeline.campaign"  # in the command line of a campaign process


@dataclasses.dataclass(frozen=True)
class Campaign:
    """One campaign: which table, under which profile, collected where."""

    name: str
    """Its name on the command line."""
    table: Path
    """The replication file whose rows it trains."""
    profile: str
    """The params.yaml profile it runs under."""
    out_dir: Path
    """Where `collect` writes runs.json, metrics.json and scores.json."""
    seeds: tuple[int, ...] | None = None
    """The campaign's own seeds, replacing the profile's (a registered campaign fixes its
    fresh seeds here, so its rows keep the profile's run configs, hence their run
    directories); None: the profile's seeds."""
    registration: str | None = None
    """The document that registered the campaign before its runs (its verdict is withheld
    until every planned run is in); None for a campaign not registered."""

    def request(
        self, params: Path, runs_root: Path, workers: int | None = None, commit: bool = True
    ) -> RunRequest:
        """The `RunRequest` of one session of this campaign (its table, profile, seeds)."""
        from envgen.pipeline.campaign_run import RunRequest

        return RunRequest(
            self.name, self.table, self.profile, params, runs_root, workers, commit, self.seeds
        )

    @property
    def log(self) -> Path:
        return STATE_DIR / f"{self.name}.log"

    @property
    def pid_file(self) -> Path:
        """Line 1: the campaign process's pid (its session and group id); line 2: workers."""
        return STATE_DIR / f"{self.name}.pid"


# Seeds of the confirmatory campaign registered in docs/campaign_confirm.md: 15 fresh
# seeds per arm, after campaign_cpu's 0-4. Fixed by the registration: never edit.
CONFIRM_SEEDS = tuple(range(5, 20))

CAMPAIGNS: dict[str, Campaign] = {
    "cpu": Campaign(
        "cpu", Path("replication/campaign_cpu.yaml"), "cpu", Path("results/campaign_cpu")
    ),
    "confirm": Campaign(
        "confirm",
        Path("replication/campaign_confirm.yaml"),
        "cpu",
        Path("results/campaign_confirm"),
        CONFIRM_SEEDS,
        "docs/campaign_confirm.md",
    ),
}


def campaign(name: str) -> Campaign:
    if name not in CAMPAIGNS:
        raise ConfigError("campaign", f"{name!r} is unknown; choose one of {', '.join(CAMPAIGNS)}")
    return CAMPAIGNS[name]


# --- the background process ---------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Process:
    """What the pid file says."""

    pid: int
    workers: int


def read_process(c: Campaign) -> Process | None:
    """The recorded campaign process, or None without a (readable) pid file."""
    try:
        lines = c.pid_file.read_text(encoding="utf-8").split()
        return Process(int(lines[0]), int(lines[1]) if len(lines) > 1 else 0)
    except (OSError, ValueError, IndexError):
        return None


def is_alive(pid: int) -> bool:
    """A live, non-zombie process whose command line is a campaign's (pids get reused)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    proc = Path(f"/proc/{pid}")
    if not proc.is_dir():
        return True  # no /proc: trust the signal
    try:
        if ") Z" in (proc / "stat").read_text():
            return False
        return PROCESS_MARK.encode() in (proc / "cmdline").read_bytes()
    except OSError:
        return False


def live_process(c: Campaign) -> Process | None:
    process = read_process(c)
    return process if process is not None and is_alive(process.pid) else None


def start(c: Campaign, params: Path, runs_root: Path, workers: int | None, commit: bool) -> int:
    """Launch the campaign detached; refuse while one is alive."""
    running = live_process(c)
    if running is not None:
        raise EnvGenError(
            f"campaign {c.name} is already running (pid {running.pid}, log {c.log}); see "
            f"`envgen campaign status {c.name}`, or `envgen campaign stop {c.name}`"
        )
    from envgen.envs.vector import usable_cores
    from envgen.pipeline.campaign_run import load_campaign, pending_jobs, seed_order
    from envgen.pipeline.job_status import results_versions

    # mistakes show here, not in the log
    plan, _, executor = load_campaign(c.request(params, runs_root, workers, commit))
    pending = pending_jobs(plan, runs_root, results_versions())
    if not pending and not commit:
        print(f"campaign {c.name}: all {len(seed_order(plan))} runs finished; nothing to train")
        return 0
    count = workers or executor.local_workers(usable_cores(), 0)
    command = [sys.executable, "-m", PROCESS_MARK, "run", c.name, "--params", str(params)]
    command += ["--runs-root", str(runs_root), "--workers", str(count)]
    command += [] if commit else ["--no-commit"]
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    with c.log.open("a", encoding="utf-8") as log:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    c.pid_file.write_text(f"{process.pid}\n{count}\n", encoding="utf-8")
    print(
        f"campaign {c.name}: started pid {process.pid}, {len(pending)} of "
        f"{len(seed_order(plan))} runs to train, {count} at once "
        f"({'each committed as it finishes' if commit else 'not committed'}); log {c.log}; "
        f"`envgen campaign status {c.name}`; stop: `envgen campaign stop {c.name}`"
    )
    return 0


def run(c: Campaign, params: Path, runs_root: Path, workers: int | None, commit: bool) -> int:
    """The foreground session `start` launches; clears its pid file when it ends."""
    from envgen.pipeline.campaign_run import run_campaign

    try:
        return run_campaign(c.request(params, runs_root, workers, commit))
    finally:
        process = read_process(c)
        if process is not None and process.pid == os.getpid():
            c.pid_file.unlink(missing_ok=True)


def stop(c: Campaign, wait_s: float = 15.0) -> int:
    """SIGTERM the campaign's process group (its workers too) and wait for it to end.

    The pid file's second line is the worker count, so `kill -- -$(cat pidfile)` would
    also signal pid 1: this reads the pid alone. The run in flight keeps its last
    checkpoint and resumes from it on the next `start`.
    """
    import signal
    import time

    running = live_process(c)
    if running is None:
        print(f"campaign {c.name}: not running")
        return 0
    os.killpg(running.pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while is_alive(running.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if is_alive(running.pid):
        raise EnvGenError(
            f"campaign {c.name} (pid {running.pid}) did not stop within {wait_s:.0f} s; "
            f"`kill -KILL -- -{running.pid}` ends it (the run in flight resumes from its "
            "last checkpoint)"
        )
    c.pid_file.unlink(missing_ok=True)
    print(
        f"campaign {c.name}: stopped pid {running.pid}; `envgen campaign start {c.name}` "
        "continues (the run in flight resumes from its last checkpoint)"
    )
    return 0


# --- status and collect ---------------------------------------------------------------
def status(c: Campaign, params: Path, runs_root: Path) -> int:
    """Print every (row, seed)'s state, counts per row, and an ETA."""
    from envgen.envs.vector import usable_cores
    from envgen.pipeline.campaign_run import load_campaign
    from envgen.pipeline.campaign_status import status_text
    from envgen.pipeline.campaign_store import job_states
    from envgen.pipeline.gitcommit import is_committed
    from envgen.pipeline.job_status import results_versions

    plan, _, executor = load_campaign(c.request(params, runs_root))
    process = live_process(c)
    states = job_states(plan, runs_root, results_versions(), process is not None, is_committed)
    workers = process.workers if process else executor.local_workers(usable_cores(), 0)
    print(status_text(c, states, process, workers))
    return 0


def collect(c: Campaign, params: Path, runs_root: Path, outs: Sequence[Path]) -> int:
    """Write runs.json, metrics.json and scores.json from the run store; trains nothing."""
    from envgen.files import write_json_atomic
    from envgen.pipeline.campaign_run import load_campaign
    from envgen.pipeline.campaign_store import collect_table
    from envgen.pipeline.job_status import results_versions
    from envgen.pipeline.results import table_metrics, table_scores

    plan, profile, _ = load_campaign(c.request(params, runs_root, commit=False))
    table = collect_table(
        plan, profile, runs_root, results_versions(), f"`envgen campaign start {c.name}`"
    )
    for path, data in zip(outs, (table, table_metrics(table), table_scores(table)), strict=True):
        write_json_atomic(path, data)
        print(f"[campaign] wrote {path}")
    return 0


# --- command line ------------------------------------------------------------------------
def add_commands(parser: argparse.ArgumentParser) -> None:
    """start | status | stop | handoff | collect | run, each taking the campaign's name."""
    sub = parser.add_subparsers(dest="campaign_command", metavar="ACTION", required=True)
    helps = {
        "start": "train the missing runs in the background, committing each as it finishes",
        "status": "every (row, seed): done, running, partial, stale, damaged or missing; ETA",
        "stop": "stop the background campaign (the run in flight resumes on the next start)",
        "handoff": "wait for the next checkpoints, stop, and commit the unfinished runs with "
        "them, so that another session or machine resumes them",
        "collect": "write the campaign's runs.json (and metrics, scores) from the run store",
        "run": "what start launches: the same in the foreground",
    }
    for action, text in helps.items():
        p = sub.add_parser(action, help=text, description=text)
        p.add_argument("name", help=f"the campaign: {', '.join(CAMPAIGNS)}")
        p.add_argument(
            "--params",
            type=Path,
            default=Path("params.yaml"),
            help="the params file whose profiles the campaign uses (default params.yaml)",
        )
        p.add_argument(
            "--runs-root",
            type=Path,
            default=Path("results/runs"),
            help="the run store (default results/runs)",
        )
        if action in ("start", "run"):
            p.add_argument(
                "--workers",
                type=whole_number(1),
                help="runs at once (default: params.yaml's execution.workers)",
            )
            p.add_argument(
                "--no-commit", action="store_true", help="do not commit finished runs to git"
            )
        if action == "handoff":
            p.add_argument(
                "--wait-s",
                type=whole_number(0),
                default=900,
                help="wait at most this long for each running run's next checkpoint "
                "(default 900; 0: stop at once, losing the steps since the last one)",
            )
        if action == "collect":
            for name in ("out", "metrics", "plots"):
                p.add_argument(
                    f"--{name}",
                    type=Path,
                    help=f"default: results/campaign_NAME/{_OUT_NAMES[name]}",
                )
        p.set_defaults(func=dispatch)


_OUT_NAMES = {"out": "runs.json", "metrics": "metrics.json", "plots": "scores.json"}


def dispatch(args: argparse.Namespace) -> int:
    c = campaign(args.name)
    action = args.campaign_command
    if action in ("start", "run"):
        do = start if action == "start" else run
        return do(c, args.params, args.runs_root, args.workers, not args.no_commit)
    if action == "status":
        return status(c, args.params, args.runs_root)
    if action == "stop":
        return stop(c)
    if action == "handoff":
        from envgen.pipeline.campaign_handoff import handoff

        return handoff(c, args.params, args.runs_root, args.wait_s)
    outs = [getattr(args, n) or c.out_dir / _OUT_NAMES[n] for n in _OUT_NAMES]
    return collect(c, args.params, args.runs_root, outs)


def register(subparsers: argparse._SubParsersAction) -> None:
    """`envgen campaign ...` (envgen.cli)."""
    parser = subparsers.add_parser(
        "campaign",
        description=__doc__.split("\n\n")[0],
    )
    add_commands(parser)


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(
        prog="python -m envgen.pipeline.campaign", description=__doc__.split("\n\n")[0]
    )
    add_commands(parser)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except EnvGenError as exc:
        return fail(f"envgen campaign {args.campaign_command}", exc)


if __name__ == "__main__":
    sys.exit(main())
