"""`envgen rerun --check`: do committed runs reproduce on this machine, bit for bit?

    envgen rerun --check --campaign campaign_cpu --sample 4 --updates 3
    envgen rerun --check results/runs/ca3d42bc0a83/seed-5 --updates 3

Each run named, or `--sample` K per row of each campaign's runs.json (`--sample-seed`),
is retrained for its first `--updates` updates as `envgen.evidence.rerun` does, and its
metrics and episode logs compared with the committed ones: one line per run,
"bit-identical through update U" or "first differs at update U, metric M (committed X,
here Y), episode E", with both CPUs; `--json` writes `RunCheck` mappings. Exit 0 when
every run is identical. Only a few updates: floats that differ anywhere differ in the
first update (another CPU's vector units, another BLAS path). This module registers
`envgen rerun` (both forms), above `envgen.evidence.rerun`, so neither imports the other.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import tempfile
from pathlib import Path
from typing import Any

from envgen.agents.device import torch_device
from envgen.errors import ConfigError, EnvGenError
from envgen.evidence import rerun
from envgen.files import write_json_atomic
from envgen.input_checks import not_a_file, number_in, whole_number
from envgen.llm.cache import DEFAULT_CACHE_DIR
from envgen.numerics import PORTABLE
from envgen.report.inputs import load_table
from envgen.store.provenance import machine
from envgen.store.run_diff import compare_logs
from envgen.store.run_dir import EPISODES_LOG, METRICS_LOG, RunDir


@dataclasses.dataclass(frozen=True)
class RunCheck:
    """The outcome of retraining one committed run's (`run_dir`) first updates here."""

    run_dir: str
    row: str
    """Its campaign row ("" for a run named on the command line)."""
    updates: int
    """Updates compared (the retrained run's, at most `--updates`)."""
    identical_through: int
    """Updates identical from the first on (== `updates` when none differs)."""
    metric: str | None
    """The first differing metric of the first differing update (None: identical)."""
    committed: Any
    here: Any
    """The metric's committed value and its value retrained here."""
    episodes: int
    """Episodes compared (those the retrained run finished)."""
    first_episode_differing: int | None
    """1-based index of the first differing episode (None: all compared identical)."""
    trained_on: str
    """The committed run's CPU as its provenance records it, or why it is unknown."""
    checked_on: str
    """This machine's CPU."""
    seconds: float
    portable: bool = False
    """Trained in portable CPU numerics (`envgen.numerics`): a difference on any x86-64
    CPU with AVX2 is a failure, not the machine's."""
    full: bool = False
    """Retrained to its end (`--full`): every update and episode compared."""

    @property
    def identical(self) -> bool:
        return self.metric is None and self.first_episode_differing is None

    def line(self) -> str:
        if self.identical:
            span = (
                f"to the end ({self.updates} updates, "
                if self.full
                else f"through update {self.updates} ("
            )
            verdict = f"bit-identical {span}{self.episodes} episode(s) identical)"
        else:
            episode = (
                f"episode {self.first_episode_differing}"
                if self.first_episode_differing is not None
                else f"episodes identical ({self.episodes} compared)"
            )
            update = (
                f"update {self.identical_through + 1}, metric {self.metric} "
                f"(committed {self.committed!r}, here {self.here!r})"
                if self.metric is not None
                else f"no update ({self.updates} identical)"
            )
            verdict = f"first differs at {update}, {episode}"
        numerics = "portable" if self.portable else "native"
        return (
            f"{self.run_dir}: {verdict}; trained on {self.trained_on}, checked on "
            f"{self.checked_on} ({self.seconds:.0f} s, {numerics} numerics)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "identical": self.identical}


# --- which runs -----------------------------------------------------------------------------
def campaign_runs(campaign: str, results: Path = Path("results")) -> dict[str, list[Path]]:
    """{row: its finished runs' directories} of `results/<campaign>/runs.json`."""
    table = load_table(results / campaign / "runs.json")
    return {row.row: [Path(run.run_dir) for run in row.runs] for row in table.rows}


def sample_runs(rows: dict[str, list[Path]], k: int, seed: int) -> list[tuple[str, Path]]:
    """K runs drawn per row (all when a row has fewer), in row order then seed order."""
    rng = random.Random(seed)
    picked = []
    for row, runs in rows.items():
        chosen = rng.sample(runs, min(k, len(runs)))
        picked += [(row, run) for run in sorted(chosen, key=lambda p: RunDir(p).seed or 0)]
    return picked


def cpu_label(session: dict[str, Any] | None) -> str:
    """A provenance session's CPU ("AMD EPYC, AVX512"), or why it is unknown."""
    if session is None:
        return "an unrecorded machine (provenance backfilled)"
    machine = session.get("machine") or {}
    cpu = machine.get("cpu") or "unknown CPU"
    capability = machine.get("torch_cpu_capability")
    return f"{cpu}, {capability}" if capability else str(cpu)


def this_cpu(device: str = "cpu") -> str:
    return cpu_label({"machine": machine(device)})


# --- one run --------------------------------------------------------------------------------
def check_run(run_dir: Path, row: str, args: argparse.Namespace) -> RunCheck:
    """Retrain `run_dir`'s first `args.updates` updates in a temporary directory and
    compare them with its committed logs (throughput fields aside)."""
    run = rerun.committed_run(run_dir)
    updates = None if args.full else args.updates
    with tempfile.TemporaryDirectory(prefix="envgen-rerun-check-") as tmp:
        what = f"{run_dir}: the retrained run"
        here, finished, elapsed = rerun.retrain_in(Path(tmp), run, args, updates, what)
        if args.full and not finished:
            raise EnvGenError(
                f"{run_dir}: --full: the retrain did not reach the run's end in "
                f"{args.seconds:g} s; give more --seconds"
            )
        retrained = rerun.run_log(here, METRICS_LOG)[:updates]
        if not retrained:
            raise EnvGenError(
                f"{run_dir}: the retrain logged no update in {args.seconds:g} s; give more "
                "--seconds"
            )
        episodes_here = rerun.run_log(here, EPISODES_LOG)
    metrics = compare_logs(METRICS_LOG, rerun.run_log(run_dir, METRICS_LOG), retrained)
    episodes = compare_logs(EPISODES_LOG, rerun.run_log(run_dir, EPISODES_LOG), episodes_here)
    metric, theirs, ours = (metrics.keys[0], *metrics.values[0]) if metrics.keys else [None] * 3
    return RunCheck(
        run_dir=run_dir.as_posix(),
        row=row,
        updates=len(retrained),
        identical_through=metrics.compared if metrics.identical else metrics.index,
        metric=metric,
        committed=theirs,
        here=ours,
        episodes=episodes.compared,
        first_episode_differing=None if episodes.identical else episodes.index + 1,
        trained_on=cpu_label(run.session),
        checked_on=this_cpu(args.device or run.device),
        seconds=round(elapsed, 1),
        portable=run.config.get("cpu_numerics") == PORTABLE,
        full=bool(args.full),
    )


# --- the command ----------------------------------------------------------------------------
def selected_runs(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """The named runs, then `--sample` per row of each `--campaign`."""
    picked = [("", Path(p)) for p in args.run_dir]
    for campaign in args.campaign:
        picked += sample_runs(campaign_runs(campaign), args.sample, args.sample_seed)
    if not picked:
        raise ConfigError("--check", "name run directories or --campaign NAME")
    return picked


def check_runs(args: argparse.Namespace) -> int:
    """Check each selected run in turn, print its line, write `--json`; 0 if all agree."""
    if args.updates is None and not args.full:
        raise ConfigError("--updates", "--check needs the number of updates to compare, or --full")
    checks = []
    for row, run_dir in selected_runs(args):
        check = check_run(run_dir, row, args)
        print(check.line(), flush=True)
        checks.append(check)
    same = sum(c.identical for c in checks)
    span = "to their end" if args.full else "through their first updates"
    print(f"{same} of {len(checks)} run(s) bit-identical {span} here")
    if args.json:
        record = {"command": command_line(args), "checked_on": this_cpu(args.device or "cpu")}
        write_json_atomic(args.json, {**record, "runs": [c.to_dict() for c in checks]})
    return 0 if same == len(checks) else 1


def command_line(args: argparse.Namespace) -> str:
    """The command that repeats this check (for the JSON it writes)."""
    words = ["envgen rerun --check", *map(str, args.run_dir)]
    words += [f"--campaign {c}" for c in args.campaign]
    if args.campaign:
        words += [f"--sample {args.sample}", f"--sample-seed {args.sample_seed}"]
    words += ["--full"] if args.full else [f"--updates {args.updates}"]
    words += [f"--seconds {args.seconds:g}"]
    if args.torch_threads:
        words.append(f"--torch-threads {args.torch_threads}")
    return " ".join(words + ([f"--json {args.json}"] if args.json else []))


def main(args: argparse.Namespace) -> int:
    """`envgen rerun`: one run retrained and compared (`envgen.evidence.rerun`); several, a few
    updates each, with `--check`."""
    not_a_file(args.cache_dir, "LLM replies to replay (--cache-dir)")
    if args.check:
        return check_runs(args)
    if len(args.run_dir) != 1 or args.campaign:
        raise ConfigError(
            "RUN_DIR", "give one run directory (several, or --campaign, with --check)"
        )
    return rerun.rerun_one(args, args.run_dir[0])


def register(subparsers: argparse._SubParsersAction) -> None:
    """The `envgen rerun` command (envgen.cli's registry)."""
    parser = subparsers.add_parser(
        "rerun", description=rerun.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "run_dir",
        type=Path,
        nargs="*",
        metavar="RUN_DIR",
        help="a committed run's directory (several with --check)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="for each run named or sampled: its first --updates only, one line each "
        "(bit-identical through update U, or where it first differs), this machine's CPU "
        "beside the run's (envgen.evidence.rerun_check)",
    )
    parser.add_argument(
        "--campaign",
        action="append",
        default=[],
        help="--check: sample runs of results/<CAMPAIGN>/runs.json (repeatable)",
    )
    parser.add_argument(
        "--sample",
        type=whole_number(1),
        default=4,
        help="--check --campaign: runs drawn per row (default 4)",
    )
    parser.add_argument(
        "--sample-seed", type=int, default=0, help="--check: seed of the draw (default 0)"
    )
    parser.add_argument("--json", type=Path, help="--check: write the results here")
    parser.add_argument(
        "--seconds",
        type=number_in(0, rerun.MAX_SECONDS),
        default=rerun.DEFAULT_SECONDS,
        help=f"stop retraining after this long (default {rerun.DEFAULT_SECONDS:g})",
    )
    parser.add_argument(
        "--full",
        action="store_true",
        help="--check: retrain each run to its end and compare every update and episode "
        "(the reviewer's check of a portable run: a forged episode anywhere differs; give "
        "--seconds enough for whole runs, about half an hour each on a laptop CPU)",
    )
    parser.add_argument(
        "--updates",
        type=whole_number(1),
        help="stop once this many PPO updates are logged (whichever of the two comes first)",
    )
    parser.add_argument("--device", type=torch_device, help="torch device (default: the run's)")
    parser.add_argument(
        "--deterministic",
        action=argparse.BooleanOptionalAction,
        help="deterministic GPU kernels, TF32 off (default: as the run was trained; "
        "no effect on the CPU)",
    )
    parser.add_argument(
        "--torch-threads", type=whole_number(1), help="torch CPU threads (default: the run's)"
    )
    parser.add_argument(
        "--cache-dir", type=Path, default=DEFAULT_CACHE_DIR, help="LLM replies to replay"
    )
    parser.add_argument("--keep", type=Path, help="keep the retrained run in this directory")
    parser.set_defaults(func=main)
