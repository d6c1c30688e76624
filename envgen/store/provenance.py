"""Where, when and with what a run was produced: `provenance.json` in its directory.

A run trains in one or more sessions: the first starts at step 0, each later one
resumes from a checkpoint. Each records the machine (CPU, torch's CPU vector ISA, GPU
and driver), the software (Python, packages, the lock file's hash), thread counts, GPU
kernel settings, the git commit and whether the tree was dirty, its start and end times
and steps, and the host's load at both ends; a session with no end was killed.

The file also holds the run's results version, which decides whether it is current.
The code fingerprint (`code_fingerprint`) is provenance, not currency: editing a comment
changes it and no result. It covers the training path (`COVERED`) minus command-line
front ends, and a game's own engine (`GAME_DIRS`: Heist's) only in that game's runs.
Each session records its own; the top-level `code_fingerprint` is the last session's.
"""

from __future__ import annotations

import datetime
import hashlib
import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from envgen import json_input
from envgen.errors import EnvGenError
from envgen.results_version import RESULTS_VERSION
from envgen.store.manifest import is_sealed, read_run_bytes

PROVENANCE = "provenance.json"
UNKNOWN = "unknown"
REPO_ROOT = Path(__file__).resolve().parents[2]
LOCK_FILE = REPO_ROOT / "requirements.lock"
PACKAGE_ROOT = REPO_ROOT / "envgen"
COVERED = ("agents", "loop", "llm", "envs", "games.py", "scoring.py")
GAME_DIRS = {"heist": "envs/heist"}  # a game's own engine: in its runs' fingerprint only
EXCLUDED_NAMES = ("cli.py", "preview.py")
PACKAGES = ("torch", "numpy", "numba", "opensimplex", "crafter", "procgen-mirror", "openai", "dvc")


def code_fingerprint(game: str = "crafter", root: Path = PACKAGE_ROOT) -> str:
    """16 hex digits of sha256 over (relative path, content) of every .py file `game`'s
    fingerprint covers, in the order of their paths relative to `root`."""
    excluded = tuple(d + "/" for g, d in GAME_DIRS.items() if g != game)
    paths = [root / entry for entry in COVERED]
    files = {
        f.relative_to(root).as_posix(): f
        for p in paths
        for f in ([p] if p.is_file() else p.rglob("*.py"))
    }
    digest = hashlib.sha256()
    for rel in sorted(files):
        if files[rel].name not in EXCLUDED_NAMES and not rel.startswith(excluded):
            digest.update(rel.encode() + b"\0")
            digest.update(files[rel].read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def now_utc() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _output(*command: str, timeout: float = 20) -> str | None:
    """The stripped standard output of `command`, or None when it cannot run or fails."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or UNKNOWN


def _gpu(device: str) -> dict[str, Any] | None:
    """The GPU the run trains on (None on CPU): model, memory, CUDA and driver versions."""
    if not device.startswith("cuda"):
        return None
    import torch  # lazy: 0.86 s; `envgen campaign status` reads provenance without it

    index = torch.device(device).index or 0
    props = torch.cuda.get_device_properties(index)
    query = ("nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader")
    drivers = (_output(*query, timeout=10) or "").splitlines()
    return {
        "name": props.name,
        "memory_gib": round(props.total_memory / 2**30, 1),
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "driver": drivers[index] if index < len(drivers) else UNKNOWN,
    }


def machine(device: str = "cpu") -> dict[str, Any]:
    """The machine: host, CPU model and core count, torch's CPU vector ISA, the GPU."""
    import torch  # lazy: 0.86 s; `envgen campaign status` reads provenance without it

    return {
        "host": platform.node(),
        "system": f"{platform.system()} {platform.release()} {platform.machine()}",
        "cpu": _cpu_model(),
        "cpus": os.cpu_count(),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "device": device,
        "gpu": _gpu(device),
    }


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def software() -> dict[str, Any]:
    """Python, C library and package versions, and the sha256 of the lock file (first 16
    hex)."""
    lock = hashlib.sha256(LOCK_FILE.read_bytes()).hexdigest()[:16] if LOCK_FILE.is_file() else None
    return {
        "python": platform.python_version(),
        "libc": " ".join(platform.libc_ver()),  # libm's exp and log round as its version does
        **{name: _version(name) for name in PACKAGES},
        "lock_sha256": lock,
    }


def git_state(repo: Path = REPO_ROOT) -> dict[str, Any]:
    """The commit the code was at and whether tracked files had uncommitted changes."""
    commit = _output("git", "-C", str(repo), "rev-parse", "HEAD")
    if commit is None:
        return {"commit": UNKNOWN, "dirty": None}
    status = _output(
        "git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no", "--", "envgen"
    )
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


# Recorded when set: the thread counts of torch's BLAS, and the worker count of a Crafter
# run given no `--workers` (envgen.envs.vector.WORKERS_VARIABLE; it applies where
# `env_workers` is null and the game is Crafter).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "ENVGEN_ENV_WORKERS")


def threads(env_workers: int | None = None) -> dict[str, Any]:
    import torch  # lazy: 0.86 s; `envgen campaign status` reads provenance without it

    return {
        "torch_intra_op": torch.get_num_threads(),
        "torch_inter_op": torch.get_num_interop_threads(),
        "env_workers": env_workers,
        **{k: os.environ[k] for k in THREAD_VARIABLES if k in os.environ},
    }


def read_provenance(run_dir: Path) -> dict[str, Any] | None:
    """A run's provenance.json, or None if it has none (started before it existed)."""
    path = Path(run_dir) / PROVENANCE
    if not path.is_file():
        return None
    try:
        data = json_input.loads(read_run_bytes(path), path)
    except json_input.JSONInputError as exc:
        raise EnvGenError(f"{path}: unreadable provenance ({exc.detail})") from None
    if not isinstance(data, dict):
        raise EnvGenError(f"{path}: unreadable provenance (not a mapping)")
    return data


def recorded_version(run_dir: Path) -> int | None:
    """The results version a run was produced under (None: unknown, so not current).

    Unknown is an unsealed run without a version (made before versions, or in progress).
    Damage raises, naming the file: a sealed run without one, an unreadable or edited
    provenance.json, a version of another type (`"1"`); it must stop whoever asked (the
    pipeline would judge the run stale and delete it), never pass for another version.
    """
    run_dir = Path(run_dir)
    path = run_dir / PROVENANCE
    data = read_provenance(run_dir)
    value = (data or {}).get("results_version")
    if value is None and is_sealed(run_dir):
        problem = "no results_version in it" if data is not None else "it is missing"
        raise EnvGenError(
            f"{path}: the run is sealed but {problem}, so its results version is unknown; "
            "restore it from git (git checkout -- PATH)"
        )
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise EnvGenError(
            f"{path}: results_version is {value!r}, not a whole number; restore it from git "
            "(git checkout -- PATH)"
        )
    return value


def is_current(run_dir: Path, key: str) -> bool:
    """Whether the run's results version is the code's for its kind `key`
    (`envgen.results_version.version_key`)."""
    return recorded_version(run_dir) == RESULTS_VERSION[key]


def kernel_settings() -> dict[str, Any]:
    """The GPU kernel settings `envgen.agents.device.set_deterministic` controls, read from
    torch as they are now: the kernels `envgen rerun` repeats."""
    import torch  # lazy: 0.86 s; `envgen campaign status` reads provenance without it

    return {
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cudnn_deterministic": torch.backends.cudnn.deterministic,
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
        "tf32_cudnn": torch.backends.cudnn.allow_tf32,
        "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
    }


def machine_label(data: dict[str, Any] | None) -> str:
    """Where a run trained, in a few words: "CPU model (torch ISA), device" per machine
    its sessions ran on, joined by " + " when it resumed elsewhere; "unknown" for a run
    without provenance or with a back-filled one. Tables count their runs by it."""
    sessions = (data or {}).get("sessions") or []
    if not sessions or (data or {}).get("backfilled"):
        return UNKNOWN
    labels: list[str] = []
    for session in sessions:
        m = session.get("machine") if isinstance(session, dict) else None
        m = m if isinstance(m, dict) else {}
        gpu = m.get("gpu") if isinstance(m.get("gpu"), dict) else None
        device = f"{m.get('device', UNKNOWN)}" + (f" ({gpu.get('name', UNKNOWN)})" if gpu else "")
        label = f"{m.get('cpu', UNKNOWN)} ({m.get('torch_cpu_capability', UNKNOWN)}), {device}"
        if label not in labels:
            labels.append(label)
    return " + ".join(labels)


def summary(data: dict[str, Any] | None, path: object = PROVENANCE) -> str:
    """One line: machine, torch ISA, device, sessions (resumes), commit, dirty; an
    `EnvGenError` naming `path` (the file `data` came from) and the field when a
    session does not have the shape this reads."""
    if not data:
        return "no provenance"
    sessions = data.get("sessions") or []
    if not sessions or data.get("backfilled"):
        note = f"; note: {data['note']}" if data.get("note") else ""
        return f"results v{data.get('results_version')}; machine unknown (backfilled){note}"
    _check_sessions(path, sessions)
    last = sessions[-1]
    m = last.get("machine") or {}
    g = last.get("git") or {}
    resumes = sum(1 for s in sessions if s.get("event") == "resume")
    loads = [s["load_start"][0] for s in sessions if s.get("load_start")]
    parts = [
        f"results v{data.get('results_version')}",
        f"{m.get('cpu', UNKNOWN)} ({m.get('torch_cpu_capability', UNKNOWN)})",
        str(m.get("device", UNKNOWN)),
        f"{len(sessions)} session(s), {resumes} resume(s)",
        f"commit {str(g.get('commit', UNKNOWN))[:10]}{' dirty' if g.get('dirty') else ''}",
    ]
    if loads:
        parts.append(f"load {max(loads):.1f} at start")
    return "; ".join(parts)


def last_session_step(data: dict[str, Any] | None, path: object = PROVENANCE) -> int:
    """The env step a run's last session started at (its `wall_s` counts from there): 0
    for a run never resumed, without sessions or backfilled; an `EnvGenError` naming the
    field when a session does not have the shape `summary` reads."""
    sessions = (data or {}).get("sessions") or []
    if not sessions or (data or {}).get("backfilled"):
        return 0
    _check_sessions(path, sessions)
    return sessions[-1].get("step") or 0


def _check_sessions(path: object, sessions: Any) -> None:
    """An `EnvGenError` naming the field unless `sessions` is a list of mappings whose
    `machine` and `git` are mappings, `step` a whole number >= 0 and `load_start` a list
    of numbers (each may be absent): what `summary` and the campaign's speed read. Only
    they check: `read_provenance` must not refuse a run whose version is readable."""
    if not isinstance(sessions, list):
        raise EnvGenError(f"{path}: sessions is {sessions!r}, not a list of sessions")
    for i, session in enumerate(sessions):
        where = f"{path}: sessions[{i}]"
        if not isinstance(session, dict):
            raise EnvGenError(f"{where} is {session!r}, not a mapping")
        for key in ("machine", "git"):
            if session.get(key) is not None and not isinstance(session[key], dict):
                raise EnvGenError(f"{where}.{key} is {session[key]!r}, not a mapping")
        step = session.get("step")
        if step is not None and (isinstance(step, bool) or not isinstance(step, int) or step < 0):
            raise EnvGenError(f"{where}.step is {step!r}, not a whole number >= 0")
        load = session.get("load_start")
        numbers = isinstance(load, list) and all(
            isinstance(x, int | float) and not isinstance(x, bool) for x in load
        )
        if load is not None and not numbers:
            raise EnvGenError(f"{where}.load_start is {load!r}, not a list of numbers")
