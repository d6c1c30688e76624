"""A campaign's reproduction sentence for CLAIMS.md, from its committed `envgen rerun --check`.

results/audit/reproduce/<campaign>.json (written by `envgen rerun --check --campaign
<campaign> --json ...`, envgen.evidence.rerun_check) holds, per sampled run, whether its first
updates retrained on the checking machine repeat the committed logs bit for bit. The
sentence says, per row, where its runs were trained (their provenance) and how many
repeat on the machine that ran the check; it reads the file only, never retrains.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from envgen import json_input

REPRODUCE_DIR = Path("results/audit/reproduce")


def reproduction_sentence(campaign: str, directory: Path = REPRODUCE_DIR) -> str:
    """One sentence on whether `campaign`'s sampled runs reproduce where they were checked."""
    path = directory / f"{campaign}.json"
    if not path.is_file():
        return (
            f"Reproduction not checked (no {path.as_posix()}; `envgen rerun --check "
            f"--campaign {campaign} --json {path.as_posix()}`)."
        )
    try:
        data = json_input.read(path)
        runs = data["runs"]
        rows = dict.fromkeys(r["row"] for r in runs)  # in the file's order
        parts = [_row(row, [r for r in runs if r["row"] == row]) for row in rows]
        updates = max(r["updates"] for r in runs)
        portable = sum(bool(r.get("portable")) for r in runs)  # absent: checked as native
        numerics = (
            "all in native CPU numerics, so each repeats only on the CPU class that trained it"
            if not portable
            else f"{portable} of them in portable CPU numerics (any x86-64 CPU with AVX2)"
        )
        full = runs and all(r.get("full") for r in runs)
        span = "all updates" if full else f"the first {updates} updates"
        head = (
            f"Reproduction (`envgen rerun --check`, {path.as_posix()}): {span} of "
            f"{len(runs)} sampled runs retrained on {data['checked_on']}, {numerics}"
        )
    except (json_input.JSONInputError, KeyError, TypeError, ValueError) as exc:
        return f"Reproduction: {path.as_posix()} unreadable ({exc}); run the check again."
    return f"{head}. " + ". ".join(parts) + "."


def _row(row: str, runs: Sequence[Mapping[str, Any]]) -> str:
    """ "<row>: trained on X, k of n bit-identical[, the others first differing at update
    U]; trained on Y, ..." (one clause per machine the row's sampled runs trained on)."""
    clauses = []
    for machine in sorted({r["trained_on"] for r in runs}):
        group = [r for r in runs if r["trained_on"] == machine]
        same = sum(r["identical"] for r in group)
        clause = f"trained on {machine}, {same} of {len(group)} bit-identical"
        at = sorted({r["identical_through"] + 1 for r in group if r["metric"] is not None})
        if at:
            clause += f", {'the others' if same else 'each'} first differing at update "
            clause += ", ".join(map(str, at))
        clauses.append(clause)
    return f"{row}: " + "; ".join(clauses)
