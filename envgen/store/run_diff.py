"""Compare what two runs of one (config, seed) wrote, timing aside.

For the results-version guard (tests/test_results_version.py: whole run directories of
two code versions) and `envgen rerun` (a committed run against its first steps retrained
here). Both ignore what differs by design: `time/*` in metrics.jsonl, `wall_s` in
final_metrics.json, provenance, manifest and checkpoints.
"""

from __future__ import annotations

import dataclasses
import gzip
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envgen import json_input
from envgen.store.manifest import CHECKPOINT_DIR

SKIPPED = {"provenance.json", "manifest.json"}  # where and when: differ by design
VOLATILE_KEYS = {"wall_s"}  # final_metrics.json: wall-clock time
VOLATILE_PREFIX = "time/"  # metrics.jsonl: throughput


def behaviour(record: dict[str, Any]) -> dict[str, Any]:
    """A log record without its timing fields."""
    return {k: v for k, v in record.items() if not k.startswith(VOLATILE_PREFIX)}


def differing_keys(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


@dataclasses.dataclass(frozen=True)
class LogComparison:
    """A log of one run against the same log of another, over their common prefix."""

    name: str
    compared: int
    """Records compared: the shorter log's length."""
    lengths: tuple[int, int]
    """(first, second) log lengths."""
    index: int | None = None
    """0-based index of the first differing record, None when the prefix is identical."""
    keys: tuple[str, ...] = ()
    values: tuple[tuple[Any, Any], ...] = ()
    """The differing keys' values, (first, second) per key."""
    step: int | None = None
    """The first differing record's `step` in the first log."""

    @property
    def identical(self) -> bool:
        return self.index is None


def compare_logs(name: str, first: Sequence[dict], second: Sequence[dict]) -> LogComparison:
    """The first record, over the common prefix, whose behaviour fields differ."""
    lengths = (len(first), len(second))
    for i, (a, b) in enumerate(zip(first, second, strict=False)):
        a, b = behaviour(a), behaviour(b)
        if a != b:
            keys = differing_keys(a, b)
            return LogComparison(
                name,
                min(lengths),
                lengths,
                i,
                tuple(keys),
                tuple((a.get(k), b.get(k)) for k in keys),
                a.get("step"),
            )
    return LogComparison(name, min(lengths), lengths)


# --- whole run directories ------------------------------------------------------------
def _content(path: Path) -> Any:
    """A run file's comparable content: timing fields dropped, logs decompressed."""
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    name = path.name.removesuffix(".gz")
    if name.endswith(".jsonl"):
        return [
            behaviour(json_input.loads(line, path)) for line in data.splitlines() if line.strip()
        ]
    if name == "final_metrics.json":
        return {k: v for k, v in json_input.loads(data, path).items() if k not in VOLATILE_KEYS}
    return data


def outputs(run_dir: Path) -> dict[str, Path]:
    """{name, sealed logs under their plain name: path} of a run's comparable files."""
    files = {}
    for path in sorted(Path(run_dir).rglob("*")):
        rel = path.relative_to(run_dir)
        if path.is_file() and rel.parts[0] != CHECKPOINT_DIR and path.name not in SKIPPED:
            files[rel.as_posix().removesuffix(".gz")] = path
    return files


def first_difference(
    ours: Path, reference: Path, labels: tuple[str, str] = ("this tree", "the reference")
) -> str | None:
    """The first output that differs between two whole run directories, or None;
    `labels` name the two sides where a file is in one only."""
    a, b = outputs(ours), outputs(reference)
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            return f"{name}: only in {labels[0] if name in a else labels[1]}"
        x, y = _content(a[name]), _content(b[name])
        if x == y:
            continue
        if isinstance(x, list) and isinstance(y, list):
            found = compare_logs(name, x, y)
            if not found.identical:
                return f"{name} record {found.index + 1}: {', '.join(found.keys)} differ"
            return f"{name}: {len(x)} records vs {len(y)}"
        if isinstance(x, dict) and isinstance(y, dict):
            return f"{name}: {', '.join(differing_keys(x, y))} differ"
        return f"{name}: contents differ"
    return None
