"""Where the runs a campaign reuses trained: one line per row for `start` and `status`.

Under native CPU numerics a run repeats bit for bit only on its own CPU class
(`envgen.numerics`), so reused arms trained on different classes compare the machines
too, and a portable and a native run of one config differ. Each row's line gives the
runs it reuses, how many are committed, their CPU classes (CPU model and torch's CPU
capability, per provenance session) and numerics, then a warning when they mix. Reads
files only: no torch (tests/test_lazy_imports.py).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from envgen.campaign.progress import is_finished, row_jobs, version_of
from envgen.errors import EnvGenError
from envgen.numerics import NATIVE
from envgen.pipeline.job_status import job_dir
from envgen.pipeline.plan import TablePlan
from envgen.store.manifest import LATEST_CHECKPOINT, is_sealed
from envgen.store.provenance import UNKNOWN, read_provenance
from envgen.store.run_dir import RunDir
from envgen.yaml_input import YAMLInputError
from envgen.yaml_input import read as read_yaml


@dataclasses.dataclass
class RowReuse:
    """What one row reuses: finished runs (`committed` of them in git), partial runs it
    resumes, and per CPU class and numerics mode how many of those runs trained so."""

    planned: int = 0
    finished: int = 0
    committed: int = 0
    partial: int = 0
    classes: Counter[str] = dataclasses.field(default_factory=Counter)
    numerics: Counter[str] = dataclasses.field(default_factory=Counter)


def cpu_classes(data: Mapping[str, Any] | None) -> list[str]:
    """The distinct CPU classes a run's sessions trained on, "CPU model (torch CPU
    capability)", in order; ["unknown"] without provenance or with a back-filled one."""
    sessions = (data or {}).get("sessions") or []
    if not isinstance(sessions, list) or not sessions or (data or {}).get("backfilled"):
        return [UNKNOWN]
    classes: list[str] = []
    for session in sessions:
        machine = session.get("machine") if isinstance(session, dict) else None
        machine = machine if isinstance(machine, dict) else {}
        label = f"{machine.get('cpu', UNKNOWN)} ({machine.get('torch_cpu_capability', UNKNOWN)})"
        if label not in classes:
            classes.append(label)
    return classes


def run_numerics(run_dir: Path) -> str:
    """The run config's `cpu_numerics` ("native" when absent: the field is written only
    when portable); "unknown" when the config cannot be read."""
    try:
        config = read_yaml(RunDir(run_dir).config)
    except YAMLInputError:
        return UNKNOWN
    return str(config.get("cpu_numerics", NATIVE)) if isinstance(config, dict) else UNKNOWN


def row_reuse(
    plan: TablePlan,
    runs_root: Path,
    versions: Mapping[str, int],
    committed: Callable[[Path], bool],
) -> dict[str, RowReuse]:
    """{row label: what it reuses}: finished runs of the current code and partial runs
    (a checkpoint, not sealed: resumed). Stale runs are trained again, so not counted."""
    rows: dict[str, RowReuse] = {}
    for row, job in row_jobs(plan):
        reuse = rows.setdefault(row, RowReuse())
        reuse.planned += 1
        run_dir = job_dir(job, runs_root)
        if is_finished(run_dir, version_of(job, versions)):
            reuse.finished += 1
            reuse.committed += bool(committed(run_dir))
        elif not is_sealed(run_dir) and (run_dir / LATEST_CHECKPOINT).is_file():
            reuse.partial += 1
        else:
            continue
        try:
            classes = cpu_classes(read_provenance(run_dir))
        except EnvGenError:
            classes = [f"unreadable {RunDir(run_dir).provenance.name}"]
        reuse.classes.update(classes)
        reuse.numerics[run_numerics(run_dir)] += 1
    return rows


def reuse_lines(rows: Mapping[str, RowReuse]) -> list[str]:
    """A heading, one line per row, and a warning line for each of CPU classes and
    numerics that the reused runs mix (unknown ones aside: they cannot be told apart)."""
    lines = ["reused runs per row (kept as they are; partial ones resume):"]
    for row, reuse in rows.items():
        line = f"  {row}: {reuse.finished} of {reuse.planned} done ({reuse.committed} committed)"
        line += f", {reuse.partial} partial" if reuse.partial else ""
        if reuse.classes:
            line += "; CPU " + ", ".join(f"{c} x{n}" for c, n in reuse.classes.items())
            line += "; " + ", ".join(f"{m} x{n}" for m, n in reuse.numerics.items())
        lines.append(line)
    for what, field, note in (
        ("CPU classes", "classes", "a native run repeats bit for bit only on its own class"),
        ("CPU numerics", "numerics", "a portable and a native run round differently"),
    ):
        kinds: dict[str, Counter[str]] = {}
        for row, reuse in rows.items():
            for kind, count in getattr(reuse, field).items():
                if kind != UNKNOWN and not kind.startswith("unreadable"):
                    kinds.setdefault(kind, Counter())[row] += count
        if len(kinds) > 1:
            parts = ", ".join(
                f"{kind} x{sum(by_row.values())} "
                f"({'every row' if len(by_row) == len(rows) else ', '.join(by_row)})"
                for kind, by_row in kinds.items()
            )
            lines.append(f"warning: the reused runs mix {what}: {parts}; {note}")
    return lines
