"""`envgen rerun RUN_DIR`: retrain a committed run's first steps here and compare them.

    envgen rerun results/runs/ca3d42bc0a83/seed-5                 # 120 s, then compare
    envgen rerun results/runs/ca3d42bc0a83/seed-5 --updates 20    # the first 20 updates
    envgen rerun --check --campaign campaign_cpu --updates 3      # 4 runs per row, 3 updates

On the machine class that trained it, a run retrains bit for bit; on another CPU or
software stack the floats differ from the first PPO update on and the runs diverge
(README, "Reproducibility"). This command tells which holds for one committed run: it
trains it again from step 0 as its provenance records (config, seed, device, GPU kernel
settings, torch threads, env workers; LLM replies replayed from the cache) into a
temporary directory, stops after `--seconds` or `--updates`, and compares every record
both wrote (logs without timing, cycle files): how much was identical, the first
difference with both values, and where the machines or software differ. Exit 0:
identical over what was compared; 1: a difference (stdout) or a mistake (one line on
stderr). The committed run is only read, through its manifest. The parser and `--check`
are `envgen.evidence.rerun_check`'s; docs/pipeline.md, "Rerun a committed run".
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from envgen.agents.runlog import read_jsonl, read_jsonl_written
from envgen.errors import ConfigError, EnvGenError
from envgen.loop.config import RunConfig
from envgen.loop.identity import check_identity
from envgen.numerics import PORTABLE
from envgen.store import is_sealed, read_provenance, read_run_bytes, run_file_exists
from envgen.store.identity import refuse_links
from envgen.store.provenance import PACKAGES, machine, software
from envgen.store.run_diff import compare_logs, first_difference
from envgen.store.run_dir import EPISODES_LOG, METRICS_LOG, NOT_CONFIG, CycleDir, RunDir

DEFAULT_SECONDS = 120.0
MAX_SECONDS = 7 * 24 * 3600.0  # a week: longer is a typo, not a check
POLL_S = 0.5


@dataclasses.dataclass(frozen=True)
class Committed:
    """What the committed run says about itself."""

    run_dir: Path
    config: dict[str, Any]
    """The run's config without `seed` and `config_hash`: the file `envgen run` takes."""
    seed: int
    device: str
    torch_threads: int
    env_workers: int | None
    session: dict[str, Any] | None
    """Its first provenance session (None when backfilled: machine unknown)."""
    deterministic: bool
    """Trained with `--deterministic`; False where its provenance predates that record
    (every such committed run trained on the CPU, where the flag changes nothing)."""


def committed_run(run_dir: Path) -> Committed:
    """Read a run directory's config, seed and first session; one `EnvGenError` if it is
    not a run directory or its config no longer hashes to its recorded hash."""
    run = RunDir(run_dir)
    path = run.config
    if not path.is_file():
        raise ConfigError(
            "RUN_DIR",
            f"{run_dir} holds no {path.name}; give a run directory such as "
            "results/runs/<config-hash>/seed-<K>",
        )
    refuse_links(run_dir)  # a linked folder reruns another run than the one named
    data = run.read_config()  # bounded: a deep or huge config is one line, not a traceback
    if not isinstance(data.get("seed"), int):
        raise EnvGenError(f"{path}: no integer 'seed'; is this a run's {path.name}?")
    config = {k: v for k, v in data.items() if k not in NOT_CONFIG}
    recorded = data.get("config_hash")
    actual = RunConfig.from_dict(config).config_hash()
    if recorded is not None and recorded != actual:
        raise EnvGenError(
            f"{path}: its config hashes to {actual} with this code, not to its recorded "
            f"{recorded}; the code's config fields changed since the run (rerun it with the "
            "commit in its provenance)"
        )
    if actual != run.config_hash or data["seed"] != run.seed:
        raise EnvGenError(
            f"{path}: config hash {actual}, seed {data['seed']}, but the run lies in "
            f"{run_dir.parent.name}/{run_dir.name}: the folder holds another run"
        )
    if is_sealed(run_dir):  # a finished run: its final metrics and provenance agree too
        check_identity(run_dir)
    provenance = read_provenance(run_dir)
    if provenance is None:
        raise EnvGenError(
            f"{run.provenance}: missing, so the machine, threads and kernel settings "
            "the rerun must repeat are unknown; restore it from git (git checkout -- PATH)"
        )
    sessions = [] if provenance.get("backfilled") else provenance.get("sessions") or []
    where = run.provenance
    first = _mapping(sessions[0], where, "sessions[0]") if sessions else None
    part = {key: _mapping((first or {}).get(key), where, key) for key in PARTS}
    return Committed(
        run_dir,
        config,
        data["seed"],
        str(part["machine"].get("device") or "cpu"),
        _count(part["threads"].get("torch_intra_op"), where, "torch_intra_op") or 1,
        _count(part["threads"].get("env_workers"), where, "env_workers"),
        first,
        part["kernels"].get("deterministic_algorithms") is True,
    )


PARTS = ("machine", "threads", "kernels")  # the fields of a session the rerun repeats


def _count(value: Any, path: Path, field: str) -> int | None:
    """`value` if a whole number >= 1, None if absent; an `EnvGenError` otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise EnvGenError(f"{path}: {field} is {value!r}, not a whole number >= 1")
    return value


def _mapping(value: Any, path: Path, field: str) -> dict[str, Any]:
    """`value` if a mapping, {} if absent; an `EnvGenError` naming the field otherwise."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise EnvGenError(f"{path}: {field} is {type(value).__name__}, not a mapping")
    return value


# --- retraining -------------------------------------------------------------------------
def rerun_command(
    run: Committed, config: Path, runs_root: Path, args: argparse.Namespace
) -> list[str]:
    """`envgen run` of the committed run's config and seed, its device, kernel settings,
    threads and workers (each unless `args` names another)."""
    command = [sys.executable, "-m", "envgen.cli", "run", str(config), "--seed", str(run.seed)]
    command += ["--runs-root", str(runs_root), "--cache-dir", str(args.cache_dir)]
    command += ["--device", args.device or run.device]
    command += ["--torch-threads", str(args.torch_threads or run.torch_threads)]
    if run.env_workers:
        command += ["--workers", str(run.env_workers)]
    if run.deterministic if args.deterministic is None else args.deterministic:
        command.append("--deterministic")
    return command


def _records_written(path: Path) -> int:
    try:
        with path.open("rb") as f:
            return sum(1 for line in f if line.endswith(b"\n"))
    except OSError:
        return 0


def _stop(process: subprocess.Popen) -> None:
    """End the run and its env workers (its own process group)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(5.0)
            return


def retrain(command: list[str], run_dir: Path, seconds: float, updates: int | None, log: Path):
    """Run `command` until it ends, `seconds` pass or the metrics log has `updates` lines.

    Returns (finished, elapsed seconds, return code or None when stopped)."""
    metrics = RunDir(run_dir).metrics
    started = time.monotonic()
    with log.open("w", encoding="utf-8") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            while process.poll() is None:
                elapsed = time.monotonic() - started
                if elapsed >= seconds or (updates and _records_written(metrics) >= updates):
                    _stop(process)
                    return False, elapsed, None
                time.sleep(POLL_S)
        except BaseException:
            _stop(process)
            raise
    return process.returncode == 0, time.monotonic() - started, process.returncode


# --- comparing --------------------------------------------------------------------------
def retrain_in(
    work: Path,
    run: Committed,
    args: argparse.Namespace,
    updates: int | None,
    what: str = "the retrained run",
) -> tuple[Path, bool, float]:
    """Retrain `run` in `work` (its config written there) for `args.seconds` or `updates`;
    (the retrained run's directory, finished, elapsed seconds). A failed retrain is one
    `EnvGenError` line with the last line of its output."""
    config = work / "config.yaml"
    config.write_text(yaml.safe_dump(run.config, sort_keys=True), encoding="utf-8")
    here = work / "runs" / RunDir(run.run_dir).run_id
    command = rerun_command(run, config, work / "runs", args)
    finished, elapsed, code = retrain(command, here, args.seconds, updates, work / "rerun.log")
    if code not in (None, 0):
        tail = (work / "rerun.log").read_text(encoding="utf-8", errors="replace").strip()
        raise EnvGenError(
            f"{what} failed (exit {code}): {tail.splitlines()[-1] if tail else 'no output'}"
        )
    return here, finished, elapsed


def run_log(run_dir: Path, name: str) -> list[dict[str, Any]]:
    """A run's log: sealed (checked against its manifest) when it finished, else as far
    as it was written (a last line torn by a stop or a kill dropped)."""
    plain = run_dir / name
    if plain.is_file():
        return read_jsonl_written(plain)
    return read_jsonl(plain) if run_file_exists(plain) else []  # stopped before its first line


def _cycle_files(committed: Path, here: Path) -> Iterator[tuple[str, Any, Any]]:
    """(name, committed content, here content) of each cycle file both runs hold; a
    cycle's feedback only once the rerun wrote the worlds that follow it."""
    for path in sorted(RunDir(here).cycles_root.glob("*/*")):
        rel = path.relative_to(here).as_posix()
        theirs = committed / rel
        if path.name.startswith(".") or not theirs.is_file():
            continue
        cycle = CycleDir(path.parent)
        if path == cycle.feedback and not cycle.environments.is_file():
            continue
        a, b = read_run_bytes(theirs), path.read_bytes()
        if path.suffix == ".json":
            a, b = json.loads(a), json.loads(b)
        yield rel, a, b


def describe(comparison: Any) -> str:
    """One line per log: identical over n of (committed, here) records, or the first
    difference with both values."""
    name, (n_committed, n_here) = comparison.name, comparison.lengths
    if comparison.identical:
        return (
            f"{name}: {comparison.compared} record(s) identical "
            f"(committed {n_committed}, retrained {n_here})"
        )
    where = f"record {comparison.index + 1}"
    if comparison.step is not None:
        where += f" (step {comparison.step:,})"
    shown = "; ".join(
        f"{k} {a!r} committed, {b!r} here"
        for k, (a, b) in list(zip(comparison.keys, comparison.values, strict=True))[:3]
    )
    more = len(comparison.keys) - 3
    return f"{name}: first difference at {where} of {comparison.compared} compared: {shown}" + (
        f" (+{more} more field(s))" if more > 0 else ""
    )


# Fields whose difference can change a run's floats (every package but the LLM client and
# DVC); the rest (kernel, core count) is listed but does not explain a difference.
ARITHMETIC = {
    "machine": ("cpu", "torch_cpu_capability", "device", "gpu"),
    "software": (
        "python",
        "libc",
        "lock_sha256",
        *(p for p in PACKAGES if p not in ("openai", "dvc")),
    ),
}


def setting_differences(
    session: dict[str, Any] | None,
    device: str,
    kernels: dict[str, Any] | None = None,
    portable: bool = False,
) -> tuple[list[str], bool]:
    """(where this machine's and software's fields differ from the committed run's, whether
    any of them can change floats); an unknown machine counts as one that can.

    `kernels` are the retrained run's GPU kernel settings (its provenance); they are
    compared where both runs recorded them, and change floats only on a GPU. For a
    `portable` run (`envgen.numerics`) the machine changes no float: only software can."""
    if session is None:
        return ["the committed run's machine and software are unknown (backfilled)"], True
    on_gpu = device.startswith("cuda")
    parts = [("machine", machine(device)), ("software", software())]
    found, arithmetic = [], False
    if kernels is not None and session.get("kernels") is not None:
        parts.append(("kernels", kernels))
    elif on_gpu:
        found, arithmetic = ["kernels: not recorded by both runs"], True
    for part, here in parts:
        theirs = session.get(part) or {}
        for key in sorted(set(theirs) | set(here)):
            if key == "host" or theirs.get(key) == here.get(key):
                continue
            found.append(f"{part}.{key}: {theirs.get(key)!r} committed, {here.get(key)!r} here")
            floats = on_gpu if part == "kernels" else key in ARITHMETIC[part]
            arithmetic = arithmetic or (floats and not (portable and part == "machine"))
    return found, arithmetic


def rerun_one(args: argparse.Namespace, run_dir: Path) -> int:
    """Retrain `run_dir` for `--seconds` or `--updates` and print the comparison."""
    run = committed_run(run_dir)
    with contextlib.ExitStack() as stack:
        work = args.keep or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        work.mkdir(parents=True, exist_ok=True)
        here = work / "runs" / RunDir(run_dir).run_id
        if here.exists():
            raise EnvGenError(f"{here} exists: give --keep an empty directory")
        deterministic = run.deterministic if args.deterministic is None else args.deterministic
        limit = f"{args.seconds:g} s" + (f" or {args.updates} updates" if args.updates else "")
        print(
            f"envgen rerun {run_dir}: seed {run.seed} on {args.device or run.device}, "
            f"{args.torch_threads or run.torch_threads} torch thread(s)"
            + (", deterministic kernels" if deterministic else "")
            + f", up to {limit}",
            flush=True,
        )
        _, finished, elapsed = retrain_in(work, run, args, args.updates)
        print(f"retrained {elapsed:.0f} s ({'to the end' if finished else 'stopped'})")
        kernels = ((read_provenance(here) or {}).get("sessions") or [{}])[0].get("kernels")
        comparisons = [
            compare_logs(name, run_log(run_dir, name), run_log(here, name))
            for name in (METRICS_LOG, EPISODES_LOG)
        ]
        lines = [describe(c) for c in comparisons]
        same = all(c.identical for c in comparisons)
        cycle_files = list(_cycle_files(run_dir, here))
        differing = [rel for rel, a, b in cycle_files if a != b]
        if cycle_files:
            lines.append(
                f"cycle files: {len(cycle_files) - len(differing)} of {len(cycle_files)} "
                "identical" + (f"; first differing: {differing[0]}" if differing else "")
            )
        same = same and not differing
        if finished:
            whole = first_difference(here, run_dir, ("the retrained run", "the committed"))
            if whole is not None:
                same = False
                lines.append(f"whole run: {whole}")
        if not any(c.compared for c in comparisons):
            raise EnvGenError("the retrained run wrote no record to compare; give more --seconds")
    for line in lines:
        print(line)
    portable = run.config.get("cpu_numerics") == PORTABLE
    settings, explains = setting_differences(
        run.session, args.device or run.device, kernels, portable
    )
    print(
        "machine and software: "
        + ("as the committed run's" if not settings else "; ".join(settings))
    )
    print("numerics: " + ("portable (any x86-64 CPU with AVX2)" if portable else "native"))
    if same:
        print("identical over every record compared: this machine repeats the committed run")
        return 0
    first = next((x for x in lines if "difference" in x or "differing" in x), lines[0])
    print("DIFFERS: " + verdict(portable, explains, first))
    return 1


def verdict(portable: bool, explains: bool, difference: str) -> str:
    """What a difference means: for a portable run, a failure wherever the software is the
    recorded one; for a native run, expected where machine or software differ."""
    if portable and not explains:
        return (
            f"this run does not reproduce: {difference} (a portable run retrains bit for bit "
            "on any x86-64 CPU with AVX2 under the recorded software: its logs are not the "
            "ones it trained, or the portable mode leaks; report it with this output)"
        )
    if explains:
        return (
            "expected where "
            + ("software differs" if portable else "machine or software differ")
            + " (floats differ in their last digits, then the runs diverge): compare such "
            "runs by their scores' statistics, or rerun under the recorded software"
        )
    return (
        "the same CPU, ISA, device and package versions as recorded, so this is a "
        "reproducibility failure: report it with this output"
    )
