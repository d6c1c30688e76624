"""`envgen campaign start|status|stop|handoff|collect|run NAME`: a campaign across machines.

Each action's help says what it does. `start` launches `python -m envgen.campaign.cli run
NAME` in its own session, one process per campaign (`envgen.campaign.process`); each
finished run is committed at once, so any checkout continues with `start` and trains only
the missing seeds (docs/pipeline.md, "CPU campaign").
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from envgen.campaign.process import stop
from envgen.campaign.registry import Campaign, campaign
from envgen.errors import EnvGenError
from envgen.input_checks import OneLineParser, fail, whole_number, writable_dir


# --- command line ------------------------------------------------------------------------
def add_commands(parser: argparse.ArgumentParser) -> None:
    """start | status | stop | handoff | collect | run, each taking the campaign's name."""
    sub = parser.add_subparsers(dest="campaign_command", metavar="ACTION", required=True)
    helps = {
        "start": "train the missing runs in the background, committing each to git as it finishes",
        "status": "every (row, seed): done, running, partial, stale, damaged or missing; ETA",
        "stop": "stop the background campaign (the run in flight resumes on the next start)",
        "handoff": "wait for the next checkpoints, stop, and commit the unfinished runs with "
        "them, so that another session or machine resumes them",
        "collect": "write the campaign's runs.json (and metrics, scores) from the run store",
        "run": "what start launches: the same in the foreground",
    }
    reuse = (
        ". It prints, per row, how many runs it reuses (finished, and partial ones "
        "resumed), how many of those are committed, and on which CPU classes and numerics "
        "they trained, with a warning when the campaign's runs mix classes or numerics"
    )
    descriptions = {
        "start": "train the missing runs in the background. Each finished run is committed "
        "to git as it finishes (`git commit -- <its run directory>` with the LLM replies it "
        "used, nothing else; --no-commit: commit nothing)" + reuse,
        "status": helps["status"] + reuse,
    }
    for action, text in helps.items():
        p = sub.add_parser(action, help=text, description=descriptions.get(action, text))
        p.add_argument("name", help="the campaign: NAME of replication/campaign_NAME.yaml")
        p.add_argument(
            "--params",
            type=Path,
            help="the params file whose profiles the campaign uses (default: the "
            "repository's params.yaml)",
        )
        p.add_argument(
            "--runs-root",
            type=Path,
            help="the run store (default: the repository's results/runs)",
        )
        if action in ("start", "run"):
            p.add_argument(
                "--workers",
                type=whole_number(1),
                help="runs at once (default: params.yaml's execution.workers)",
            )
            p.add_argument(
                "--no-commit",
                action="store_true",
                help="do not commit finished runs to git (default: each finished run is "
                "committed as it finishes)",
            )
        if action == "run":  # `start` hands its lock to the process it launches
            p.add_argument("--lock-fd", type=int, help=argparse.SUPPRESS)
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
_DEFAULTS = {"params": Path("params.yaml"), "runs_root": Path("results/runs")}


def at_repository_root(c: Campaign, args: argparse.Namespace) -> None:
    """Work from the repository's root, wherever the command was typed: the lock, log,
    replication file, params.yaml and run store are paths from the root (a `start` typed
    in a subdirectory would otherwise take a lock of its own beside a live campaign's).
    Paths given on the command line stay relative to where they were typed. With no root
    above, the command runs where it is and reports what is missing there.
    """
    here = Path.cwd()
    root = next((d for d in (here, *here.parents) if (d / c.table).is_file()), None)
    moved = root is not None and root != here
    for name, default in (*_DEFAULTS.items(), *((n, None) for n in _OUT_NAMES)):
        given = getattr(args, name, None)
        if given is not None and moved and not given.is_absolute():
            # relative to the root, as typed from it: run_dir fields stay relative
            setattr(args, name, Path(os.path.relpath(here / given, root)))
        elif given is None and default is not None:
            setattr(args, name, default)
    if moved:
        os.chdir(root)


def dispatch(args: argparse.Namespace) -> int:
    """Run the action."""
    c = campaign(args.name)
    action = args.campaign_command
    at_repository_root(c, args)
    if action == "stop":
        return stop(c)
    if action != "collect":  # collect wants an existing store (status.collect)
        writable_dir(args.runs_root, "the run store (--runs-root)")
    # lazy: the planner, scipy and the Crafter engine (about 0.7 s), which `--help` and
    # `stop` need not (tests/test_lazy_imports.py)
    from envgen.campaign import handoff, run, status

    if action == "start":
        return run.start(c, args.params, args.runs_root, args.workers, not args.no_commit)
    if action == "run":
        return run.run(
            c, args.params, args.runs_root, args.workers, not args.no_commit, args.lock_fd
        )
    if action == "handoff":
        return handoff.handoff(c, args.params, args.runs_root, args.wait_s)
    if action == "status":
        return status.status(c, args.params, args.runs_root)
    outs = [getattr(args, n) or c.out_dir / _OUT_NAMES[n] for n in _OUT_NAMES]
    return status.collect(c, args.params, args.runs_root, outs)


def register(subparsers: argparse._SubParsersAction) -> None:
    """`envgen campaign ...` (envgen.cli)."""
    add_commands(subparsers.add_parser("campaign", description=__doc__.split("\n\n")[0]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(
        prog="python -m envgen.campaign.cli", description=__doc__.split("\n\n")[0]
    )
    add_commands(parser)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except EnvGenError as exc:
        return fail(f"envgen campaign {args.campaign_command}", exc)


if __name__ == "__main__":
    sys.exit(main())
